import Testing

@testable import Engine
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

    /// Inside a bounded string (`minLength`/`maxLength`: JSON string characters counted) and a
    /// bounded pattern (`[a-z0-9-]{1,10}`: one byte set counted), at every remaining length, the
    /// mask takes the counted path and equals brute force over the whole vocabulary.
    @Test func boundedStringsAtEveryRemainingLengthEqualBruteForce() throws {
        let tokenizer = try SchemaCheck.tokenizer.get()
        let eog = tokenizer.endOfGenerationIDs
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: eog)
        let tokens: [[UInt8]?] = (0..<Int32(trie.vocabularySize)).map { trie.tokenBytes($0).map(Array.init) }
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
        defer { allowed.deallocate() }
        let m = GrammarMatcher(
            grammar: try SchemaCheck.schema(
                #"""
                {"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":9},
                 "k":{"type":"string","pattern":"^[a-z0-9-]{1,6}$"}},"required":["s","k"],"additionalProperties":false}
                """#
            ).compiledGrammar())
        func check(_ label: String, counted: Bool) {
            m.fillMask(trie: trie, allowed: allowed)
            let fast = (0..<trie.vocabularySize).filter { allowed[$0 >> 6] >> UInt64($0 & 63) & 1 != 0 }.map(Int32.init)
            #expect(fast == m.bruteForceMask(tokens: tokens, endOfGeneration: eog).sorted(), "\(label)")
            // Once the length is used up only the closing quote is left: nothing to count.
            #expect((m.usesCountedMask(trie: trie)) == counted, "\(label): the counted path is used")
        }
        for filler in ["a", "é", "\\n", "中"] {
            m.reset()
            #expect(m.accept(bytes: Array(#"{"s": ""#.utf8)))
            for n in 0...9 {
                check("string after \(n) × \(filler)", counted: n < 9)
                if n < 9 { #expect(m.accept(bytes: Array(filler.utf8))) }
            }
            #expect(m.accept(bytes: Array(#"", "k": ""#.utf8)))
            for n in 0...6 {
                check("pattern after \(n) characters", counted: n < 6)
                if n < 6 { #expect(m.accept(bytes: [0x61 + UInt8(n)])) }
            }
        }
    }
}
