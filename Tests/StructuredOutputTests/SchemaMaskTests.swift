import Engine
import Testing

@testable import StructuredOutput

/// The mask equals the brute-force reference over the default model's whole vocabulary, along
/// random walks through grammars compiled from real schemas.
@Suite struct SchemaMaskTests {
    static let schemas = [
        #"""
        {"type":"object","properties":{"location":{"type":"string","description":"City"},
         "unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":14},
         "when":{"type":"string","format":"date"}},"required":["location","unit"],"additionalProperties":false}
        """#,
        #"""
        {"$defs":{"item":{"type":"object","properties":{"name":{"type":"string","maxLength":12},
         "tags":{"type":"array","items":{"type":"string"},"maxItems":3},"sub":{"$ref":"#/$defs/item"}},
         "required":["name"]}},"type":"array","items":{"$ref":"#/$defs/item"}}
        """#,
    ]

    @Test func maskEqualsBruteForceOnTheDefaultVocabulary() throws {
        let tokenizer = try SchemaCheck.tokenizer.get()
        let eog = tokenizer.endOfGenerationIDs
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: eog)
        let tokens: [[UInt8]?] = (0..<Int32(trie.vocabularySize)).map { trie.tokenBytes($0).map(Array.init) }
        let words = (trie.vocabularySize + 63) / 64
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: words)
        defer { allowed.deallocate() }
        var rng = SeededGenerator(seed: 3)
        for (index, source) in Self.schemas.enumerated() {
            let m = GrammarMatcher(grammar: try SchemaCheck.schema(source).compiledGrammar())
            for _ in 0..<2 {
                m.reset()
                for _ in 0..<10 {
                    m.fillMask(trie: trie, allowed: allowed)
                    let fast = (0..<trie.vocabularySize).filter { allowed[$0 >> 6] >> UInt64($0 & 63) & 1 != 0 }
                        .map(Int32.init)
                    let slow = m.bruteForceMask(tokens: tokens, endOfGeneration: eog).sorted()
                    #expect(fast == slow, "schema \(index)")
                    let choices = fast.filter { !eog.contains($0) }
                    guard fast == slow, !choices.isEmpty else { break }
                    #expect(m.accept(bytes: tokens[Int(choices[Int(rng.next() % UInt64(choices.count))])]!))
                }
            }
        }
    }
}
