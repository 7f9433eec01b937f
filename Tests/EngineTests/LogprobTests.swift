import Foundation
import Synchronization
import Testing

@testable import Engine

/// Log-probabilities as the engine records them (#34), against log-softmax computed here in
/// double precision from the scripted model's known logits (every token i has 0.01·(i mod 7), the
/// script's next byte 10): one entry per generated token, the end token excluded, written before
/// the snapshot that shows the token; alternatives most likely first with ties by id; the raw
/// distribution ignores the penalties that the processed one includes; a sampled token's is
/// over the top-k survivors at the request's temperature.
@Suite struct LogprobTests {
    /// log-softmax of the scripted logits at a step whose preferred token is `next`, with
    /// `adjust` applied to logits first (penalties), at `temperature`, over `survivors` (nil: all).
    static func expected(
        _ token: Int, next: Int, adjust: [Int: Double] = [:], temperature: Double = 1, survivors: [Int]? = nil
    ) -> Double {
        var logits = (0..<257).map { Double($0 % 7) * 0.01 }
        logits[next] = 10
        for (i, value) in adjust { logits[i] = value }
        let pool = survivors ?? Array(0..<257)
        let m = pool.map { logits[$0] / temperature }.max()!
        let z = m + log(pool.map { exp(logits[$0] / temperature - m) }.reduce(0, +))
        return logits[token] / temperature - z
    }

    func run(_ request: GenerationRequest, script: String = "hi") async throws -> (
        GenerationResult, [TokenLogprob], [Int]
    ) {
        let seen = Mutex<[Int]>([])
        let recorder = try #require(request.logprobs)
        let result = try await ScriptedPredictor(script: script).runner().generate(request) { event in
            // Every snapshot finds the entries of the tokens it shows already written.
            if case .snapshot(_, let n) = event { seen.withLock { $0.append(recorder.count - n) } }
        }
        return (result, recorder.all, seen.withLock { $0 })
    }

    @Test func greedyEntriesAreTheLogSoftmaxOfEachStep() async throws {
        var request = GenerationRequest(promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 8, sampling: .greedy)
        request.logprobs = LogprobRecorder(top: 3)
        let (result, entries, lag) = try await run(request)
        #expect(result.content == "hi" && result.finishReason == .stop)
        #expect(entries.map(\.id) == [104, 105], "the end token has no entry")
        #expect(entries.map(\.bytes) == [[104], [105]])
        #expect(lag.allSatisfy { $0 == 0 }, "\(lag)")
        for (entry, next) in zip(entries, [104, 105]) {
            #expect(abs(Double(entry.logprob) - Self.expected(next, next: next)) < 1e-5)
            // The preferred byte, then the two lowest ids among the next highest logits (i mod 7 = 6).
            #expect(entry.top.map(\.id) == [Int32(next), 6, 13], "\(entry.top.map(\.id))")
            #expect(abs(Double(entry.top[1].logprob) - Self.expected(6, next: next)) < 1e-5)
        }
    }

    @Test func rawIgnoresPenaltiesThatProcessedIncludes() async throws {
        var sampling = SamplingOptions.greedy
        sampling.repeatPenalty = 2
        // The prompt's 'h' is in the penalty's window: its logit 10 becomes 5 (still the most likely),
        // and so is the prompt's marker 255 (0.03 becomes 0.015).
        var raw = GenerationRequest(promptTokens: ScriptedPredictor.prompt("h"), maxTokens: 8, sampling: sampling)
        raw.logprobs = LogprobRecorder(top: 2, distribution: .raw)
        var processed = raw
        processed.logprobs = LogprobRecorder(top: 2, distribution: .processed)
        let rawEntries = try await run(raw).1
        let processedEntries = try await run(processed).1
        let h = 104
        #expect(abs(Double(rawEntries[0].logprob) - Self.expected(h, next: h)) < 1e-5)
        #expect(
            abs(Double(processedEntries[0].logprob) - Self.expected(h, next: h, adjust: [h: 5, 255: 0.015])) < 1e-5)
        #expect(rawEntries[0].logprob != processedEntries[0].logprob)
    }

    @Test func aSampledTokensDistributionIsTheSurvivorsAtTheTemperature() async throws {
        var sampling = SamplingOptions()
        sampling.temperature = 2
        sampling.topK = 2
        sampling.topP = 1
        sampling.minP = 0
        sampling.seed = 7
        var request = GenerationRequest(promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 1, sampling: sampling)
        request.logprobs = LogprobRecorder(top: 5)
        let (result, entries, _) = try await run(request)
        let entry = try #require(entries.first)
        #expect(result.tokens.first == entry.id)
        // Only the two survivors are listed, and their probabilities add up to one.
        #expect(entry.top.map(\.id) == [104, 6])
        #expect(abs(entry.top.map { exp(Double($0.logprob)) }.reduce(0, +) - 1) < 1e-5)
        let expected = Self.expected(Int(entry.id), next: 104, temperature: 2, survivors: [104, 6])
        #expect(abs(Double(entry.logprob) - expected) < 1e-5)
    }

}
