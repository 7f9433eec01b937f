import Foundation
import TestSupport
import Testing

/// Log-probabilities through OpenAI's routes (#34) with the default model: completions'
/// legacy `logprobs` for a token-id prompt against llama.cpp's own (the reference commit's
/// `n_probs`, `Tests/Fixtures/reference/logits.json`), chat's `logprobs.content` whose tokens
/// spell the answer and whose stream carries exactly the plain answer's entries, the processed
/// distribution (the one drawn from) apart from the raw one, and refusals naming their field.
@Suite(.serialized) struct LogprobsEndToEndTests {
    static func model() throws -> String { try SharedModel.engine().modelName }

    static func post(_ s: RunningServer, _ path: String, _ body: [String: Any]) async throws -> RawResponse {
        let json = jsonString(body)
        return try await offPool { try s.client(timeout: 120).postJSON(path, json) }
    }

    @Test func completionLogprobsMatchLlamaCpp() async throws {
        let url = TestPaths.packageRoot.appendingPathComponent("Tests/Fixtures/reference/logits.json")
        let reference = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let cases = try #require(reference["cases"] as? [[String: Any]])
        try await RunningServer.with { s in
            var worst = 0.0
            for c in cases {
                let name = c["name"] as? String ?? "?"
                let steps = try #require(c["greedy_4_steps_raw"] as? [[String: Any]])
                let r = try await Self.post(
                    s, "/v1/completions",
                    [
                        "model": try Self.model(), "prompt": try #require(c["prompt_ids"] as? [Int]), "max_tokens": 4,
                        "temperature": 0, "logprobs": 10, "logprobs_mode": "raw_logprobs",
                    ])
                let choice = try #require((r.json?["choices"] as? [[String: Any]])?.first, "\(r.text)")
                let lp = try #require(choice["logprobs"] as? [String: Any], "\(r.text)")
                let tokens = try #require(lp["tokens"] as? [String])
                let values = try #require(lp["token_logprobs"] as? [Double])
                let tops = try #require(lp["top_logprobs"] as? [[String: Double]])
                let offsets = try #require(lp["text_offset"] as? [Int])
                #expect(tokens.joined() == choice["text"] as? String, "\(name): tokens spell the text")
                #expect(offsets.first == 0 && offsets == offsets.sorted(), "\(name): \(offsets)")
                // The end token's entry comes last (its text empty), as evaluation harnesses count on.
                let end = steps.firstIndex { ($0["id"] as? Int) == 2 }
                let expectedSteps = end.map { steps[...$0] } ?? steps[...]
                #expect(values.count == expectedSteps.count, "\(name): \(values.count) entries")
                for (i, step) in expectedSteps.enumerated() where i < values.count {
                    let theirs = try #require(step["logprob"] as? Double)
                    worst = max(worst, abs(values[i] - theirs))
                    #expect(abs(values[i] - theirs) < 0.02, "\(name) step \(i): \(values[i]) vs \(theirs)")
                    let isEnd = step["id"] as? Int == 2
                    #expect(tokens[i] == (isEnd ? "" : step["token"] as? String), "\(name) step \(i)")
                    // Each of llama.cpp's top ten that inferd lists is within the same bound.
                    for alt in step["top_logprobs"] as? [[String: Any]] ?? [] {
                        guard let text = alt["token"] as? String, let mine = tops[i][text],
                            let value = alt["logprob"] as? Double
                        else { continue }
                        worst = max(worst, abs(mine - value))
                        #expect(abs(mine - value) < 0.02, "\(name) step \(i) '\(text)': \(mine) vs \(value)")
                    }
                    #expect(tops[i].count >= 9, "\(name) step \(i): \(tops[i].count) alternatives")
                }
            }
            print("logprobs against llama.cpp: max |Δ logprob| \(String(format: "%.5f", worst))")
        }
    }

    @Test func chatLogprobsSpellTheAnswerAndTheStreamCarriesTheSame() async throws {
        try await RunningServer.with { s in
            var body: [String: Any] = [
                "model": try Self.model(), "messages": [["role": "user", "content": "Name three colours."]],
                "max_tokens": 24, "temperature": 0, "logprobs": true, "top_logprobs": 3,
            ]
            let r = try await Self.post(s, "/v1/chat/completions", body)
            let choice = try #require((r.json?["choices"] as? [[String: Any]])?.first, "\(r.text)")
            let content = try #require((choice["message"] as? [String: Any])?["content"] as? String)
            let entries = try #require((choice["logprobs"] as? [String: Any])?["content"] as? [[String: Any]])
            let bytes = entries.flatMap { $0["bytes"] as? [Int] ?? [] }.map { UInt8($0) }
            #expect(String(decoding: bytes, as: UTF8.self) == content)
            for e in entries {
                let top = try #require(e["top_logprobs"] as? [[String: Any]])
                let values = top.compactMap { $0["logprob"] as? Double }
                #expect(top.count == 3 && values == values.sorted(by: >), "\(top)")
                // Greedy: the chosen token is the most likely one.
                #expect(top.first?["token"] as? String == e["token"] as? String)
                #expect((e["logprob"] as? Double ?? 1) <= 0)
            }
            body["stream"] = true
            let streamBody = jsonString(body)
            let text = try await offPool { () -> String in
                let c = try s.client(timeout: 120)
                _ = try c.startStream("/v1/chat/completions", streamBody)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.data == "[DONE]" } }
                return reader.text
            }
            var streamed: [[String: Any]] = []
            for event in SSEReader(text: text).events where event.data != "[DONE]" {
                let chunk = (jsonObject(event.data)["choices"] as? [[String: Any]])?.first
                streamed += (chunk?["logprobs"] as? [String: Any])?["content"] as? [[String: Any]] ?? []
            }
            #expect(streamed.map { $0["token"] as? String } == entries.map { $0["token"] as? String })
            #expect(streamed.map { $0["logprob"] as? Double } == entries.map { $0["logprob"] as? Double })
        }
    }

    @Test func processedIsTheDistributionDrawnFromAndRawTheModels() async throws {
        try await RunningServer.with { s in
            // top_k 1 leaves one token to draw: its processed log-probability is 0, the raw one
            // the model's (as greedy raw gives it).
            func first(_ mode: String, _ sampling: [String: Any]) async throws -> Double {
                let r = try await Self.post(
                    s, "/v1/completions",
                    [
                        "model": try Self.model(), "prompt": "The capital of France is", "max_tokens": 1, "logprobs": 2,
                        "logprobs_mode": mode,
                    ].merging(sampling) { _, b in b })
                let lp = (r.json?["choices"] as? [[String: Any]])?.first?["logprobs"] as? [String: Any]
                return try #require((lp?["token_logprobs"] as? [Double])?.first, "\(r.text)")
            }
            let sampled: [String: Any] = ["temperature": 1, "top_k": 1, "seed": 3]
            let processed = try await first("processed_logprobs", sampled)
            let raw = try await first("raw_logprobs", sampled)
            let greedyRaw = try await first("raw_logprobs", ["temperature": 0])
            #expect(processed == 0, "one survivor: \(processed)")
            #expect(raw < -1e-3 && raw == greedyRaw, "raw \(raw), greedy raw \(greedyRaw)")
        }
    }

    @Test func refusalsNameTheirField() async throws {
        try await RunningServer.with { s in
            let chat: [String: Any] = ["model": try Self.model(), "messages": [["role": "user", "content": "hi"]]]
            let completion: [String: Any] = ["model": try Self.model()]
            let cases: [(String, [String: Any], String)] = [
                ("/v1/chat/completions", ["logprobs": true, "top_logprobs": 21], "top_logprobs"),
                ("/v1/chat/completions", ["top_logprobs": 2], "top_logprobs"),
                ("/v1/chat/completions", ["logprobs": true, "logprobs_mode": "logits"], "logprobs_mode"),
                ("/v1/chat/completions", ["logprobs": "yes"], "logprobs"),
                ("/v1/completions", ["logprobs": 21, "prompt": "x"], "logprobs"),
                ("/v1/completions", ["logprobs": true, "prompt": "x"], "logprobs"),
            ]
            for (path, extra, param) in cases {
                let base = path.hasSuffix("chat/completions") ? chat : completion
                let r = try await Self.post(s, path, base.merging(extra) { _, b in b })
                #expect(r.status == 400 && r.errorParam == param, "\(extra): \(r.text)")
            }
        }
    }
}
