import Testing

@testable import Engine

@Suite struct TokenTrieTests {
    /// The default model's vocabulary as the trie sees it.
    static func vocabulary() throws -> (TokenTrie, [[UInt8]?], Set<Int32>) {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let eog = tokenizer.endOfGenerationIDs
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: eog)
        let tokens: [[UInt8]?] = (0..<Int32(tokenizer.vocabularySize)).map { id in
            trie.tokenBytes(id).map(Array.init)
        }
        return (trie, tokens, eog)
    }

    @Test func everyTextTokenIsInTheTrieAndNoControlToken() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let (trie, _, eog) = try Self.vocabulary()
        #expect(trie.vocabularySize == 49_152)
        var inTrie = 0
        for id in 0..<Int32(tokenizer.vocabularySize) {
            if tokenizer.isControl(id) || eog.contains(id) {
                #expect(trie.tokenBytes(id) == nil, "control token \(id) must never be allowed")
            } else if let bytes = trie.tokenBytes(id) {
                // Byte-level spellings are decoded: the trie holds what the detokenizer prints.
                #expect(Array(bytes) == tokenizer.tokenBytes(id))
                inTrie += 1
            }
        }
        #expect(trie.tokenCount == inTrie)
        #expect(inTrie > 49_000)
    }

    @Test func maskOverTheDefaultVocabularyEqualsBruteForce() throws {
        let (trie, tokens, eog) = try Self.vocabulary()
        let m = GrammarMatcher(grammar: try CompiledGrammar(ToyJSONGrammar.grammar))
        try MaskCheck.randomWalks(m, trie: trie, tokens: tokens, eog: eog, walks: 3, steps: 12, seed: 11)
    }
}
