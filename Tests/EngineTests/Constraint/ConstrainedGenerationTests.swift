import Foundation
import Testing

@testable import Engine

/// Generations of the real default model under a grammar.
@Suite(.serialized) struct ConstrainedGenerationTests {
    static let engine: Result<InferenceEngine, Error> = Result {
        try InferenceEngine(path: try TestFixtures.requireModel(), threads: 2)
    }

    func request(_ engine: InferenceEngine, _ question: String, maxTokens: Int, grammar: Grammar?) throws
        -> GenerationRequest
    {
        var r = GenerationRequest(
            promptTokens: try engine.promptTokens(for: [ChatMessage(role: .user, content: question)]),
            maxTokens: maxTokens, sampling: .greedy)
        if let grammar { r.constraint = try engine.constraint(grammar, identity: "toy-json") }
        return r
    }

    @Test func greedyAnswerMatchesTheGrammarAndEndsWhereItMay() async throws {
        let engine = try Self.engine.get()
        let r = try request(
            engine, "Describe a cat as a JSON object with its name and age.", maxTokens: 200,
            grammar: ToyJSONGrammar.grammar)
        let result = try await engine.generate(r)
        #expect(result.finishReason == .stop)
        #expect(result.constraintSatisfied == true)
        let m = GrammarMatcher(grammar: try CompiledGrammar(ToyJSONGrammar.grammar))
        #expect(m.accept(bytes: Array(result.content.utf8)) && m.canEnd, "\(result.content)")
        // JSON that an independent parser reads.
        #expect(
            (try? JSONSerialization.jsonObject(with: Data(result.content.utf8), options: .fragmentsAllowed)) != nil,
            "\(result.content)")
        // The unconstrained answer to the same question is not JSON: the constraint did the work.
        let free = try await engine.generate(
            try request(engine, "Describe a cat as a JSON object with its name and age.", maxTokens: 40, grammar: nil))
        #expect(free.constraintSatisfied == nil)
        #expect(free.content != result.content)
    }

    @Test func aCutAnswerIsNotSatisfied() async throws {
        let engine = try Self.engine.get()
        let r = try request(engine, "List three colors as a JSON array.", maxTokens: 4, grammar: ToyJSONGrammar.grammar)
        let result = try await engine.generate(r)
        #expect(result.finishReason == .length)
        #expect(result.constraintSatisfied == false)
        let m = GrammarMatcher(grammar: try CompiledGrammar(ToyJSONGrammar.grammar))
        #expect(m.accept(bytes: Array(result.content.utf8)), "a cut answer is still a prefix: \(result.content)")
    }

    @Test func constrainedAndUnconstrainedShareBatchesAndStayCorrect() async throws {
        let engine = try Self.engine.get()
        let free = try request(engine, "Write one sentence about the sea.", maxTokens: 24, grammar: nil)
        let bound = try request(
            engine, "Describe a dog as a JSON object.", maxTokens: 60, grammar: ToyJSONGrammar.grammar)
        let freeAlone = try await engine.runner.generate(free)
        let boundAlone = try await engine.runner.generate(bound)
        async let a = engine.runner.generate(free)
        async let b = engine.runner.generate(bound)
        let (freeTogether, boundTogether) = try await (a, b)
        #expect(freeTogether.content == freeAlone.content)
        #expect(boundTogether.content == boundAlone.content)
        #expect(boundTogether.constraintSatisfied == boundAlone.constraintSatisfied)
    }
}
