import Foundation
import Synchronization
import Testing

@testable import Engine

/// A scored prompt (completions' `echo`, #34): each prompt token's log-probability given those
/// before it, computed in the prompt pass. Against the scripted model's known logits, and on the
/// default model against each prefix run as a prompt (a prompt's rows are not those of decoding
/// it token by token, which differed by up to 0.2 in log-probability from the fifth token on
/// when measured; llama.cpp's scores are a prompt pass's too).
@Suite struct PromptScoringTests {
    @Test func scriptedPromptEntriesAreEachPositionsLogSoftmax() async throws {
        // After "a" the script's next byte would be "i" (one byte produced), after "ab" its end.
        var request = GenerationRequest(promptTokens: ScriptedPredictor.prompt("ab"), maxTokens: 8, sampling: .greedy)
        let recorder = LogprobRecorder(top: 2, scoresPrompt: true)
        request.logprobs = recorder
        let promptAtFirstSnapshot = Mutex<PromptLogprobs??>(nil)
        let result = try await ScriptedPredictor(script: "hi").runner().generate(request) { event in
            guard case .snapshot = event else { return }
            promptAtFirstSnapshot.withLock { if $0 == nil { $0 = .some(recorder.prompt) } }
        }
        #expect(result.content == "hi")
        let prompt = try #require(recorder.prompt)
        #expect(prompt.firstID == 97 && prompt.firstBytes == [97])
        #expect(prompt.scored.map(\.id) == [98, 255])
        #expect(abs(Double(prompt.scored[0].logprob) - LogprobTests.expected(98, next: 105)) < 1e-5)
        #expect(abs(Double(prompt.scored[1].logprob) - LogprobTests.expected(255, next: 256)) < 1e-5)
        #expect(prompt.scored[0].top.map(\.id) == [105, 6], "\(prompt.scored[0].top.map(\.id))")
        #expect(prompt.scored[1].bytes == [255])
        // The generated tokens keep their own entries, and the prompt's were there first.
        #expect(recorder.all.map(\.id) == [104, 105])
        let seen = try #require(promptAtFirstSnapshot.withLock { $0 })
        #expect(seen == prompt)
    }

    @Test func maxTokensZeroScoresThePromptAlone() async throws {
        var request = GenerationRequest(promptTokens: ScriptedPredictor.prompt("ab"), maxTokens: 0, sampling: .greedy)
        request.logprobs = LogprobRecorder(top: 0, scoresPrompt: true)
        let result = try await ScriptedPredictor(script: "hi").runner().generate(request)
        #expect(result.finishReason == .length && result.tokens.isEmpty && result.content.isEmpty)
        #expect(request.logprobs?.prompt?.scored.count == 2)
        #expect(request.logprobs?.all.isEmpty == true)

        // Without scoring there is nothing to do with no tokens: refused as before.
        let plain = GenerationRequest(promptTokens: ScriptedPredictor.prompt("ab"), maxTokens: 0)
        await #expect(throws: GenerationError.self) {
            try await ScriptedPredictor(script: "hi").runner().generate(plain)
        }
    }

    @Test func aScoredPromptIsNeverBatched() async throws {
        // Two prompts at once: the plain one may share passes, the scored one's chunks run alone.
        let p = ScriptedPredictor(script: "hello", stepDelay: .milliseconds(1))
        let runner = p.runner()
        let recorder = LogprobRecorder(top: 0, scoresPrompt: true)
        let scored = {
            var r = GenerationRequest(promptTokens: ScriptedPredictor.prompt("abcde"), maxTokens: 4, sampling: .greedy)
            r.logprobs = recorder
            return r
        }()
        let plain = GenerationRequest(promptTokens: ScriptedPredictor.prompt("xyz"), maxTokens: 4, sampling: .greedy)
        async let a = runner.generate(scored)
        async let b = runner.generate(plain)
        _ = try await (a, b)
        // The scripted predictor's default `score` predicts one token at a time: a scored prompt of
        // six tokens is six calls of one, and no batch ever held its six prompt tokens.
        #expect(recorder.prompt?.scored.count == 5)
        #expect(p.batchShapes.withLock { $0 }.allSatisfy { !$0.contains(6) }, "\(p.batchShapes.withLock { $0 })")
    }

    /// The default model: all rows in one pass (`forward(scoring:)`) against prefixes run as
    /// prompts, and a prompt scored in two pieces against one call.
    @Test func modelRowsMatchPrefixesRunAsPromptsAndPiecesMatchOneCall() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let tokenizer = try Tokenizer(gguf: gguf)
        let text = String(repeating: "The quick brown fox jumps over the lazy dog, and then it rests. ", count: 8)
        let tokens = tokenizer.encode(text)
        try #require(tokens.count > 70)
        let v = model.vocabularySize
        var rows = [Float](repeating: 0, count: tokens.count * v)
        try rows.withUnsafeMutableBufferPointer {
            try model.forward(scoring: tokens[...], of: tokens.count, cache: model.makeCache(capacity: 256), rows: $0)
        }
        // In two pieces cut at 70 (not a chunk boundary).
        var pieces = [Float](repeating: 0, count: tokens.count * v)
        let cache = model.makeCache(capacity: 256)
        try pieces.withUnsafeMutableBufferPointer { all in
            try model.forward(
                scoring: tokens[0..<70], of: tokens.count, cache: cache,
                rows: UnsafeMutableBufferPointer(rebasing: all[0..<(70 * v)]))
            try model.forward(
                scoring: tokens[70...], of: tokens.count, cache: cache,
                rows: UnsafeMutableBufferPointer(rebasing: all[(70 * v)...]))
        }
        #expect(rows == pieces, "a prompt scored in pieces differs from one call")
        // Each row against the last row of the same prefix run as a prompt of its own (which the
        // reference tests hold to llama.cpp): the same rows, computed in the same chunks.
        var logits = [Float](repeating: 0, count: v)
        var worst: Float = 0
        for t in stride(from: 0, to: tokens.count - 1, by: 5) {
            try logits.withUnsafeMutableBufferPointer {
                try model.forward(tokens: tokens[0...t], cache: model.makeCache(capacity: 256), logits: $0)
            }
            let fresh = logits.withUnsafeBufferPointer { Sampler.logSoftmax(of: tokens[t + 1], logits: $0, top: 0) }
            let scored = rows.withUnsafeBufferPointer {
                Sampler.logSoftmax(
                    of: tokens[t + 1], logits: UnsafeBufferPointer(rebasing: $0[(t * v)..<((t + 1) * v)]), top: 0)
            }
            worst = max(worst, abs(fresh.logprob - scored.logprob))
        }
        #expect(worst < 1e-5, "max |Δ logprob| between scored rows and prefixes run alone: \(worst)")
    }
}
