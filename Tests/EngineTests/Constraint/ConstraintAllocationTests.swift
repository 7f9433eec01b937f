import CAllocationCounter
import Testing

@testable import Engine

/// Once the states of an answer have been met, masking and advancing allocate nothing per token.
@Suite(.enabled(if: ac_is_available(), "the allocation counter replaces malloc only in plain builds"))
struct ConstraintAllocationTests {
    @Test func maskingAndAcceptingAKnownPathAllocatesNothing() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: tokenizer.endOfGenerationIDs)
        let constraint = GrammarConstraint(
            grammar: try CompiledGrammar(ToyJSONGrammar.grammar), trie: trie, identity: "toy")
        guard let processor = constraint.makeProcessor() as? GrammarProcessor else {
            Issue.record("a grammar constraint makes a GrammarProcessor")
            return
        }
        let answer = tokenizer.encode(#"{"name": "Rex", "tags": ["a", "b"], "age": 12.5, "ok": true}"#)
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: trie.vocabularySize)
        defer { logits.deallocate() }
        func run() -> Bool {
            processor.reset()
            for token in answer {
                logits.initialize(repeating: 0)
                processor.process(logits: logits)
                guard logits[Int(token)] == 0, processor.accept(token: token) else { return false }
            }
            return processor.canEnd
        }
        #expect(run(), "the answer matches the grammar")
        var ok = false
        let before = ac_thread_allocations()
        ok = run()
        let n = ac_thread_allocations() - before
        #expect(ok)
        #expect(n == 0, "\(n) allocations over \(answer.count) tokens")
    }
}
