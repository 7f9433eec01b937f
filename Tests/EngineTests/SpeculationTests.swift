import Foundation
import Synchronization
import Telemetry
import Testing

@testable import Engine

/// Speculative decoding with prompt lookup: drafts are checked in one pass of decode rows and
/// the answer is the one plain decoding gives, token for token, greedy or sampled with a seed,
/// with its log-probabilities; only the number of passes changes.
@Suite(.serialized) struct SpeculationTests {
    @Test func promptLookupProposesWhatFollowedTheLongestRecentMatch() {
        let drafter = PromptLookupDrafter(minMatch: 2, maxMatch: 3)
        // ... 7 8 9 [1 2 3] 4 5 6 ... 1 2 3: the 3-token suffix last seen before 4 5 6.
        let history: [Int32] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 10, 11, 1, 2, 3]
        #expect(drafter.draft(after: history[...], limit: 3) == [10, 11, 1])
        #expect(drafter.draft(after: history[...], limit: 1) == [10])
        // Only a 2-token match: [5, 6] follows [3, 4]? No: the suffix [9, 4] never occurred.
        #expect(drafter.draft(after: [3, 4, 5, 6, 9, 4][...], limit: 4) == [])
        // A 2-token suffix seen once.
        #expect(drafter.draft(after: [7, 3, 4, 8, 9, 3, 4][...], limit: 4) == [8, 9, 3, 4])
        // Nothing past the window.
        let far = PromptLookupDrafter(minMatch: 2, maxMatch: 2, window: 4)
        #expect(far.draft(after: [3, 4, 8, 0, 0, 3, 4][...], limit: 2) == [])
        #expect(drafter.draft(after: history[...], limit: 0) == [])
    }

    private struct Run {
        let tokens: [Int32]
        let content: String
        let logprobs: [TokenLogprob]
    }

    private func run(
        _ model: LlamaModel, _ tokenizer: Tokenizer, prompt: [Int32], sampling: SamplingOptions, speculate: Bool,
        metrics: Metrics
    ) async throws -> Run {
        let runner = GenerationRunner(
            predictor: model, endOfGeneration: tokenizer.endOfGenerationIDs,
            makeDecoder: { StreamingDetokenizer(tokenizer: tokenizer) }, metrics: metrics,
            speculation: speculate
                ? Speculation(drafter: PromptLookupDrafter(), maxDraft: 6, metrics: metrics) : nil)
        defer { runner.shutdown() }
        var request = GenerationRequest(promptTokens: prompt, maxTokens: 48, sampling: sampling)
        request.logprobs = LogprobRecorder(top: 2)
        let result = try await runner.generate(request)
        return Run(tokens: result.tokens, content: result.content, logprobs: request.logprobs?.all ?? [])
    }

    /// The default model, on a prompt it answers by repeating (drafts accepted) and on one it
    /// does not: greedy, and sampled with a seed and penalties, the same tokens, text and
    /// log-probabilities with speculation as without; and speculation did run.
    @Test func answersAreThePlainOnesTokenForToken() async throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let tokenizer = try Tokenizer(gguf: gguf)
        let prompts = [
            "Count: one, two, three, one, two, three, one, two, three, one, two,",
            "Write a haiku about the sea.",
            "{\"name\": \"Ada\", \"age\": 36}, {\"name\": \"Alan\", \"age\": 41}, {\"name\":",
        ].map { tokenizer.encode($0) }
        var sampled = SamplingOptions()
        sampled.seed = 7
        sampled.repeatPenalty = 1.1
        sampled.presencePenalty = 0.3
        let metrics = Metrics()
        for prompt in prompts {
            for sampling in [SamplingOptions.greedy, sampled] {
                let plain = try await run(
                    model, tokenizer, prompt: prompt, sampling: sampling, speculate: false, metrics: Metrics())
                let fast = try await run(
                    model, tokenizer, prompt: prompt, sampling: sampling, speculate: true, metrics: metrics)
                #expect(fast.tokens == plain.tokens, "\(fast.content) / \(plain.content)")
                #expect(fast.content == plain.content)
                let firstDiffering = zip(fast.logprobs, plain.logprobs).enumerated().first {
                    $0.element.0 != $0.element.1
                }?.offset
                #expect(
                    fast.logprobs.count == plain.logprobs.count && firstDiffering == nil,
                    "\(sampling.temperature) \(plain.content): entries \(fast.logprobs.count) / \(plain.logprobs.count), first differing \(firstDiffering ?? -1): \(firstDiffering.map { "\(fast.logprobs[$0]) / \(plain.logprobs[$0])" } ?? "")"
                )
            }
        }
        let drafted = metrics.value("inferd_speculative_drafted_tokens_total") ?? 0
        let accepted = metrics.value("inferd_speculative_accepted_tokens_total") ?? 0
        #expect(drafted > 0 && accepted > 0 && accepted <= drafted, "drafted \(drafted), accepted \(accepted)")
    }

    /// A verify pass near the end of the answer drafts no more than the tokens left: the answer
    /// stops at max_tokens exactly.
    @Test func draftsStayWithinMaxTokens() async throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let tokenizer = try Tokenizer(gguf: gguf)
        let prompt = tokenizer.encode("a b c a b c a b c a b c a b c a b c a b")
        let runner = GenerationRunner(
            predictor: model, endOfGeneration: tokenizer.endOfGenerationIDs,
            makeDecoder: { StreamingDetokenizer(tokenizer: tokenizer) },
            speculation: Speculation(drafter: PromptLookupDrafter(), maxDraft: 8))
        defer { runner.shutdown() }
        for maxTokens in [1, 2, 5, 9] {
            let result = try await runner.generate(
                GenerationRequest(promptTokens: prompt, maxTokens: maxTokens, sampling: .greedy))
            #expect(result.tokens.count <= maxTokens)
            #expect(result.finishReason == .length || result.finishReason == .stop)
        }
    }

    /// A draft model (here the default model's own weights, so its guesses are mostly right):
    /// the same answers as plain decoding, greedy and seeded, with drafts accepted; a draft
    /// model of another vocabulary is refused at load.
    @Test func aDraftModelGivesThePlainAnswers() async throws {
        let path = try TestFixtures.requireModel()
        let gguf = try GGUFFile(path: path)
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let tokenizer = try Tokenizer(gguf: gguf)
        let draft = try InferenceEngine.loadDraftModel(path: path, for: model, tokenizer: tokenizer, contextLimit: nil)
        let metrics = Metrics()
        let speculative = GenerationRunner(
            predictor: model, endOfGeneration: tokenizer.endOfGenerationIDs,
            makeDecoder: { StreamingDetokenizer(tokenizer: tokenizer) },
            speculation: Speculation(
                makeDrafter: { ModelDrafter(model: draft, capacity: $0) }, maxDraft: 4, metrics: metrics))
        defer { speculative.shutdown() }
        var sampled = SamplingOptions()
        sampled.seed = 3
        for text in ["Write a haiku about the sea.", "What is 2 + 2?"] {
            for sampling in [SamplingOptions.greedy, sampled] {
                let request = GenerationRequest(promptTokens: tokenizer.encode(text), maxTokens: 48, sampling: sampling)
                let plain = try await run(
                    model, tokenizer, prompt: request.promptTokens, sampling: sampling, speculate: false,
                    metrics: Metrics())
                let fast = try await speculative.generate(request)
                #expect(fast.tokens == plain.tokens, "\(fast.content) / \(plain.content)")
            }
        }
        #expect((metrics.value("inferd_speculative_accepted_tokens_total") ?? 0) > 0)
        #expect(throws: ModelError.self) {
            _ = try InferenceEngine.loadDraftModel(
                path: GemmaReferenceTests.modelPath, for: model, tokenizer: tokenizer, contextLimit: nil)
        }
    }
}
