import Foundation
import TestSupport
import Testing

/// `/v1/completions` as evaluation harnesses call it (#34), on the default model: `echo` with a
/// token-id prompt and `max_tokens: 0` scores the prompt (one entry per token, the first null,
/// each as the engine computes it for that prefix run as a prompt), echo with generation keeps
/// the generated tokens' own entries, lists of prompts give one choice per prompt (× `n`) in
/// index order, streamed with their index, and `n` with a seed draws reproducibly.
@Suite(.serialized) struct CompletionsEchoEndToEndTests {
    static func model() throws -> String { try SharedModel.engine().modelName }

    static func post(_ s: RunningServer, _ body: [String: Any]) async throws -> RawResponse {
        let json = jsonString(body)
        return try await offPool { try s.client(timeout: 120).postJSON("/v1/completions", json) }
    }

    static func choices(_ r: RawResponse) throws -> [[String: Any]] {
        try #require(r.json?["choices"] as? [[String: Any]], "\(r.status) \(r.text)")
    }

    static func legacy(_ choice: [String: Any]) throws -> [String: Any] {
        try #require(choice["logprobs"] as? [String: Any], "\(choice)")
    }

    @Test func echoScoresEveryPromptTokenAsItsPrefixWouldBePredicted() async throws {
        try await RunningServer.with { s in
            let model = try Self.model()
            let tokenized = try await offPool {
                try s.client(timeout: 60).postJSON(
                    "/tokenize",
                    jsonString(["prompt": "The capital of France is Paris, and the capital of Italy is Rome."]))
            }
            let ids = try #require(tokenized.json?["tokens"] as? [Int], "\(tokenized.text)")
            let r = try await Self.post(
                s, ["model": model, "prompt": ids, "max_tokens": 0, "echo": true, "logprobs": 2, "temperature": 0])
            let choice = try #require(try Self.choices(r).first)
            let lp = try Self.legacy(choice)
            let tokens = try #require(lp["tokens"] as? [String])
            let values = try #require(lp["token_logprobs"] as? [Any])
            let tops = try #require(lp["top_logprobs"] as? [Any])
            let offsets = try #require(lp["text_offset"] as? [Int])
            #expect(tokens.count == ids.count && values.count == ids.count && tops.count == ids.count)
            #expect(values.first is NSNull && tops.first is NSNull, "the first token has nothing before it")
            #expect(tokens.joined() == choice["text"] as? String)
            #expect(choice["text"] as? String == "The capital of France is Paris, and the capital of Italy is Rome.")
            #expect(offsets.first == 0 && offsets == offsets.sorted())
            #expect(choice["finish_reason"] as? String == "length")
            let usage = try #require(r.json?["usage"] as? [String: Any])
            #expect(usage["prompt_tokens"] as? Int == ids.count && usage["completion_tokens"] as? Int == 0)
            // Token i's entry is what a request for the prefix before it computes for its first
            // token (raw: the model's own distribution, which echo's prompt entries are).
            for i in [1, 5, ids.count - 1] {
                let prefix = try await Self.post(
                    s,
                    [
                        "model": model, "prompt": Array(ids[0..<i]), "max_tokens": 1, "logprobs": 20,
                        "logprobs_mode": "raw_logprobs", "temperature": 0,
                    ])
                let prefixChoice = try #require(try Self.choices(prefix).first)
                let prefixLegacy = try Self.legacy(prefixChoice)
                let top = try #require(prefixLegacy["top_logprobs"] as? [[String: Double]])
                let echoed = try #require(values[i] as? Double)
                // The prompt's token i is among the prefix's top 20 when the model finds it likely.
                if let alone = top.first?[tokens[i]] {
                    #expect(abs(alone - echoed) < 1e-4, "token \(i) '\(tokens[i])': \(echoed) vs \(alone)")
                }
                let echoedTop = try #require(tops[i] as? [String: Double])
                #expect(echoedTop.count == 2)
                for (token, value) in echoedTop {
                    let alone = try #require(top.first?[token], "token \(i): '\(token)' in its prefix's top 20")
                    #expect(abs(alone - value) < 1e-4, "token \(i) alternative '\(token)'")
                }
            }
            // "Paris" after "The capital of France is" is likely; the entries are not all alike.
            let numbers = values.compactMap { $0 as? Double }
            #expect(numbers.count == ids.count - 1 && numbers.allSatisfy { $0 <= 0 })
            #expect(Set(numbers).count > numbers.count / 2)
        }
    }

    /// Against llama.cpp (`Tests/Fixtures/reference/score.json`: the reference commit's log-softmax
    /// of every row, one decode with every token an output, flash attention off as inferd
    /// computes): every token's log-probability within 0.002, each listed alternative too, and the
    /// text's perplexity within 0.5 %.
    @Test func echoedLogprobsMatchLlamaCppsScores() async throws {
        let url = TestPaths.packageRoot.appendingPathComponent("Tests/Fixtures/reference/score.json")
        let reference = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let cases = try #require(reference["cases"] as? [[String: Any]])
        try #require(cases.count == 3)
        try await RunningServer.with { s in
            var worst = 0.0
            var sum = 0.0
            var count = 0
            for c in cases {
                let name = c["name"] as? String ?? "?"
                let ids = try #require(c["ids"] as? [Int])
                let theirs = try #require(c["logprobs"] as? [Any])
                let theirTop = try #require(c["top5"] as? [Any])
                let r = try await Self.post(
                    s, ["model": try Self.model(), "prompt": ids, "max_tokens": 0, "echo": true, "logprobs": 5])
                let choice = try #require(try Self.choices(r).first)
                let lp = try Self.legacy(choice)
                let mine = try #require(lp["token_logprobs"] as? [Any])
                let myTop = try #require(lp["top_logprobs"] as? [Any])
                let pieces = try #require(c["pieces"] as? [String])
                #expect(lp["tokens"] as? [String] == pieces, "\(name): the same tokens")
                try #require(mine.count == ids.count && theirs.count == ids.count, "\(name)")
                var nll = 0.0
                for i in 1..<ids.count {
                    let a = try #require(mine[i] as? Double, "\(name) \(i)")
                    let b = try #require(theirs[i] as? Double, "\(name) \(i)")
                    worst = max(worst, abs(a - b))
                    sum += abs(a - b)
                    count += 1
                    nll -= a
                    #expect(abs(a - b) < 0.002, "\(name) token \(i) '\(pieces[i])': \(a) vs llama.cpp \(b)")
                    // llama.cpp's top five, by piece, where inferd lists the same piece.
                    let top = try #require(myTop[i] as? [String: Double])
                    for pair in theirTop[i] as? [[Any]] ?? [] {
                        guard let id = pair.first as? Int, let value = pair.last as? Double,
                            let piece = pieces.indices.first(where: { ids[$0] == id }).map({ pieces[$0] }),
                            let listed = top[piece]
                        else { continue }
                        #expect(abs(listed - value) < 0.002, "\(name) token \(i) alternative \(id)")
                    }
                }
                let perplexity = exp(nll / Double(ids.count - 1))
                let theirPerplexity = try #require(c["perplexity"] as? Double)
                #expect(
                    abs(perplexity / theirPerplexity - 1) < 0.005,
                    "\(name): perplexity \(perplexity) vs llama.cpp \(theirPerplexity)")
            }
            print(
                "echo against llama.cpp: mean |Δ logprob| \(String(format: "%.6f", sum / Double(count))), "
                    + "max \(String(format: "%.6f", worst)) over \(count) tokens")
        }
    }

    @Test func echoWithGenerationKeepsTheAnswersOwnEntries() async throws {
        try await RunningServer.with { s in
            let base: [String: Any] = [
                "model": try Self.model(), "prompt": "Once upon a time", "max_tokens": 6, "temperature": 0,
                "logprobs": 1,
            ]
            let plain = try #require(try Self.choices(try await Self.post(s, base)).first)
            let echoResponse = try await Self.post(s, base.merging(["echo": true]) { _, b in b })
            let echoed = try #require(try Self.choices(echoResponse).first)
            let answer = try #require(plain["text"] as? String)
            #expect(echoed["text"] as? String == "Once upon a time" + answer)
            let mine = try Self.legacy(echoed)
            let theirs = try Self.legacy(plain)
            let promptCount = (mine["tokens"] as? [String] ?? []).count - (theirs["tokens"] as? [String] ?? []).count
            #expect(promptCount == 4, "Once / upon / a / time")
            #expect(Array((mine["tokens"] as? [String] ?? []).dropFirst(promptCount)) == theirs["tokens"] as? [String])
            let a = (mine["token_logprobs"] as? [Any] ?? []).dropFirst(promptCount).compactMap { $0 as? Double }
            let b = (theirs["token_logprobs"] as? [Double] ?? [])
            #expect(a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) < 1e-4 }, "\(a) vs \(b)")
            // The answer's offsets run on after the prompt's text.
            let offsets = mine["text_offset"] as? [Int] ?? []
            #expect(offsets.count > promptCount && offsets[promptCount] == "Once upon a time".count)
        }
    }

    @Test func listsOfPromptsAndNGiveChoicesInIndexOrder() async throws {
        try await RunningServer.with { s in
            let model = try Self.model()
            let prompts: [Any] = ["The capital of France is", [504, 3575, 282], "1, 2, 3,"]
            var alone: [String] = []
            var promptTokens = 0
            for p in prompts {
                let r = try await Self.post(s, ["model": model, "prompt": p, "max_tokens": 5, "temperature": 0])
                alone.append(try #require(try Self.choices(r).first?["text"] as? String))
                promptTokens += (r.json?["usage"] as? [String: Any])?["prompt_tokens"] as? Int ?? 0
            }
            let body: [String: Any] = ["model": model, "prompt": prompts, "n": 2, "max_tokens": 5, "temperature": 0]
            let r = try await Self.post(s, body)
            let choices = try Self.choices(r)
            #expect(choices.map { $0["index"] as? Int } == [0, 1, 2, 3, 4, 5])
            #expect(choices.map { $0["text"] as? String } == alone.flatMap { [$0, $0] })
            let usage = try #require(r.json?["usage"] as? [String: Any])
            #expect(usage["prompt_tokens"] as? Int == promptTokens, "each prompt counted once")
            #expect(usage["completion_tokens"] as? Int == 30)

            // Streamed: every chunk names its choice; each choice's pieces spell its text, then
            // one finish chunk each, one [DONE].
            let streamBody = jsonString(body.merging(["stream": true]) { _, b in b })
            let text = try await offPool { () -> String in
                let c = try s.client(timeout: 120)
                _ = try c.startStream("/v1/completions", streamBody)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.data == "[DONE]" } }
                return reader.text
            }
            var pieces = [String](repeating: "", count: 6)
            var finishes = [Int](repeating: 0, count: 6)
            let events = SSEReader(text: text).events
            #expect(events.filter { $0.data == "[DONE]" }.count == 1 && events.last?.data == "[DONE]")
            for event in events where event.data != "[DONE]" {
                let choice = try #require(
                    (jsonObject(event.data)["choices"] as? [[String: Any]])?.first, "\(event.data)")
                let index = try #require(choice["index"] as? Int)
                pieces[index] += choice["text"] as? String ?? ""
                if choice["finish_reason"] as? String != nil { finishes[index] += 1 }
            }
            #expect(pieces == alone.flatMap { [$0, $0] })
            #expect(finishes == [1, 1, 1, 1, 1, 1])
        }
    }

    @Test func nWithASeedDrawsIndependentlyAndReproducibly() async throws {
        try await RunningServer.with { s in
            let body: [String: Any] = [
                "model": try Self.model(), "prompt": "My favourite animal is", "n": 3, "max_tokens": 12,
                "temperature": 1.2, "seed": 11,
            ]
            let first = try Self.choices(try await Self.post(s, body)).map { $0["text"] as? String ?? "" }
            let again = try Self.choices(try await Self.post(s, body)).map { $0["text"] as? String ?? "" }
            #expect(first.count == 3 && first == again)
            #expect(Set(first).count >= 2, "three draws all alike: \(first)")
        }
    }

    @Test func echoAndChoiceRefusalsNameTheirField() async throws {
        try await RunningServer.with { s in
            let model = try Self.model()
            let cases: [([String: Any], String)] = [
                (["prompt": "x", "max_tokens": 0], "max_tokens"),
                (["prompt": "x", "max_tokens": 0, "echo": true], "logprobs"),
                (["prompt": ["x", [1, 99_999_999]]], "prompt[1]"),
                (["prompt": ["x", ""]], "prompt[1]"),
                (["prompt": "x", "n": 17], "n"),
                (["prompt": "x", "echo": "yes"], "echo"),
            ]
            for (extra, param) in cases {
                let r = try await Self.post(s, ["model": model].merging(extra) { _, b in b })
                #expect(r.status == 400, "\(extra): \(r.text)")
                let error = r.json?["error"] as? [String: Any]
                #expect(error?["param"] as? String == param, "\(extra): \(r.text)")
            }
        }
    }
}
