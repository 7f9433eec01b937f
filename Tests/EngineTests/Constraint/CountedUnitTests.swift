import Testing

@testable import Engine

/// The counted-unit path of the mask (tokens of whole string characters looked up, counted
/// against the characters left) against the brute-force reference, on a toy vocabulary made to
/// hit its edges: escapes split over tokens, half UTF-8 sequences, quotes inside tokens, long
/// tokens, control bytes.
@Suite struct CountedUnitTests {
    /// A JSON-like string character: any scalar but `"`, `\` and controls, or an escape.
    static let character = GrammarExpression.choice([
        .characters([0...0x1F, 0x22...0x22, 0x5C...0x5C], negated: true),
        .sequence([.text("\\"), .chars("\"\\/bfnrtu")]),
    ])

    /// `{"k": "` chars{minimum,maximum} `"}`, and optionally a second member.
    static func object(minimum: Int, maximum: Int?) -> Grammar {
        var g = Grammar(root: "root")
        g.rules["char"] = character
        g.rules["root"] = .sequence([
            .text("{\"k\":"), .optional(.text(" ")), .text("\""),
            .repetition(.rule("char"), minimum: minimum, maximum: maximum), .text("\""),
            .optional(.sequence([.text(",\"n\":\""), .zeroOrMore(.rule("char")), .text("\"")])), .text("}"),
        ])
        return g
    }

    static let words = [
        "{", "}", "{\"", "{\"k", "\":", "\": \"", "\":\"", "\"", "\"}", "\",", "\",\"", "n", "\"n", "k", " ", "a",
        "ab", "abc", "abcd", "hello", "hello world", "abcdefghijklmnopqrstuvwxyz0123456789", "\\", "\\n", "\\\"",
        "\\u", "a\\", "\\\\", "é", "aé", "中文", "😀", "x\"y", "a\"}", "\"\"", "\n", "a\nb", "\t", "  ", ",",
    ]

    static func vocabulary() -> (TokenTrie, [[UInt8]?], Set<Int32>) {
        var tokens: [[UInt8]?] = words.map { Array($0.utf8) }
        tokens.append(nil)
        tokens += [[0xC3], [0xA9], [0x61, 0xC3], [0xA9, 0x62], [0xF0, 0x9F], [0x98, 0x80], [0xE4, 0xB8], [0xAD]]
        let eog: Set<Int32> = [Int32(tokens.count)]
        tokens.append(Array("</s>".utf8))
        return (TokenTrie(tokens: tokens, endOfGeneration: eog), tokens, eog)
    }

    static func masks(_ m: GrammarMatcher, _ trie: TokenTrie, _ tokens: [[UInt8]?], _ eog: Set<Int32>) -> (
        fast: [Int32], slow: [Int32]
    ) {
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
        defer { allowed.deallocate() }
        m.fillMask(trie: trie, allowed: allowed)
        let fast = (0..<trie.vocabularySize).filter { allowed[$0 >> 6] >> UInt64($0 & 63) & 1 != 0 }.map(Int32.init)
        return (fast, m.bruteForceMask(tokens: tokens, endOfGeneration: eog).sorted())
    }

    @Test func theCompilerFindsTheCountedRepetitions() throws {
        let g = try CompiledGrammar(Self.object(minimum: 2, maximum: 5))
        // The string character; the optional space (a byte set repeated at most once) and the
        // optional second member (a group repeated at most once) are units too.
        #expect(g.units.filter(\.isByteSet).count == 1)
        let unit = try #require(g.units.first { !$0.isByteSet && g.ruleNames[Int($0.rule)] == "char" })
        let counts = (0..<g.ruleCount).filter { g.repeatUnit[$0] == unit.rule }.map { g.repeatCount[$0] }.sorted()
        // The optional tail of {2,5} (1, 2, 3 more) and the unbounded second string.
        #expect(counts == [-1, 1, 2, 3])
    }

    @Test func boundedStringMaskEqualsBruteForceAtEveryRemainingLength() throws {
        let (trie, tokens, eog) = Self.vocabulary()
        for (minimum, maximum) in [(0, 0), (0, 1), (0, 3), (2, 5), (3, 3), (1, 40)] {
            let m = GrammarMatcher(grammar: try CompiledGrammar(Self.object(minimum: minimum, maximum: maximum)))
            // Each remaining length, reached with plain characters, an escape and a two-byte character.
            for filler in ["a", "\\n", "é"] {
                m.reset()
                #expect(m.accept(bytes: Array("{\"k\": \"".utf8)))
                for written in 0...maximum {
                    let (fast, slow) = Self.masks(m, trie, tokens, eog)
                    #expect(fast == slow, "{\(minimum),\(maximum)} after \(written) × \(filler)")
                    // Used up, only the closing quote is left: nothing to count.
                    #expect(
                        (m.usesCountedMask(trie: trie)) == (written < maximum),
                        "{\(minimum),\(maximum)} after \(written): the counted path is used")
                    if written < maximum { #expect(m.accept(bytes: Array(filler.utf8))) }
                }
            }
        }
    }

    @Test func unboundedStringsAndRandomWalksMatchBruteForce() throws {
        let (trie, tokens, eog) = Self.vocabulary()
        for (minimum, maximum) in [(0, nil), (1, 4), (0, 2)] as [(Int, Int?)] {
            let m = GrammarMatcher(grammar: try CompiledGrammar(Self.object(minimum: minimum, maximum: maximum)))
            try MaskCheck.randomWalks(m, trie: trie, tokens: tokens, eog: eog, walks: 30, steps: 25, seed: 5)
        }
    }

    @Test func twoBoundedStringsInOneStateCountTheLongerBudget() throws {
        // anyOf of a string of at most 2 and one of at most 4 characters: one state holds both.
        var g = Grammar(root: "root")
        g.rules["char"] = Self.character
        g.rules["root"] = .sequence([
            .text("\""),
            .choice([
                .sequence([.repetition(.rule("char"), minimum: 0, maximum: 2), .text("\"")]),
                .sequence([.repetition(.rule("char"), minimum: 0, maximum: 4), .text("\"!")]),
            ]),
        ])
        let (trie, tokens, eog) = Self.vocabulary()
        let m = GrammarMatcher(grammar: try CompiledGrammar(g))
        m.reset()
        #expect(m.accept(bytes: [0x22]))
        for written in 0...4 {
            let (fast, slow) = Self.masks(m, trie, tokens, eog)
            #expect(fast == slow)
            #expect((m.usesCountedMask(trie: trie)) == (written < 4))
            _ = m.accept(bytes: [0x61])
        }
        try MaskCheck.randomWalks(m, trie: trie, tokens: tokens, eog: eog, walks: 30, steps: 10, seed: 9)
    }

    @Test func aRepetitionFollowedByWhatAUnitCanStartWithIsNotCounted() throws {
        // char{0,3} then "a": past three characters an "a" still fits, so the count alone cannot decide.
        var g = Grammar(root: "root")
        g.rules["char"] = Self.character
        g.rules["root"] = .sequence([
            .text("\""), .repetition(.rule("char"), minimum: 0, maximum: 3), .text("a\""),
        ])
        let (trie, tokens, eog) = Self.vocabulary()
        let m = GrammarMatcher(grammar: try CompiledGrammar(g))
        m.reset()
        #expect(m.accept(bytes: [0x22]))
        #expect(m.countedUnit(m.current) == nil)
        let (fast, slow) = Self.masks(m, trie, tokens, eog)
        #expect(fast == slow)
        try MaskCheck.randomWalks(m, trie: trie, tokens: tokens, eog: eog, walks: 30, steps: 10, seed: 13)
    }

    @Test func nestedRecursiveStructuresMatchBruteForce() throws {
        // A tree of bounded strings: the continuation below a string is deep and varied.
        var g = Grammar(root: "node")
        g.rules["char"] = Self.character
        g.rules["node"] = .sequence([
            .text("{\"k\":\""), .repetition(.rule("char"), minimum: 0, maximum: 6), .text("\""),
            .optional(
                .sequence([
                    .text(",\"c\":["),
                    .optional(.sequence([.rule("node"), .zeroOrMore(.sequence([.text(","), .rule("node")]))])),
                    .text("]"),
                ])),
            .text("}"),
        ])
        var (trie, tokens, eog) = Self.vocabulary()
        for extra in [",\"c\":[", "]}", "},{\"k\":\"", "\"}]}"] { tokens.insert(Array(extra.utf8), at: 0) }
        eog = Set(eog.map { $0 + 4 })
        trie = TokenTrie(tokens: tokens, endOfGeneration: eog)
        let m = GrammarMatcher(grammar: try CompiledGrammar(g))
        try MaskCheck.randomWalks(m, trie: trie, tokens: tokens, eog: eog, walks: 40, steps: 40, seed: 17)
    }

    @Test func boundedBlanksBeforeAnOptionalNewlineAreCounted() throws {
        // JSON's bounded whitespace: blanks, then optional "\n"+blanks groups that cannot start
        // with a blank, then what follows.
        let blanks = GrammarExpression.repetition(.chars(" \t"), minimum: 0, maximum: 4)
        var g = Grammar(root: "root")
        g.rules["root"] = .sequence([
            .text("{"), blanks, .repetition(.sequence([.text("\n"), blanks]), minimum: 0, maximum: 2), .text("}"),
        ])
        let (trie, tokens, eog) = Self.vocabulary()
        let m = GrammarMatcher(grammar: try CompiledGrammar(g))
        m.reset()
        #expect(m.accept(bytes: Array("{".utf8)))
        for written in 0...4 {
            let (fast, slow) = Self.masks(m, trie, tokens, eog)
            #expect(fast == slow)
            #expect((m.usesCountedMask(trie: trie)) == (written < 4))
            if written < 4 { #expect(m.accept(bytes: [written % 2 == 0 ? 0x20 : 0x09])) }
        }
        try MaskCheck.randomWalks(m, trie: trie, tokens: tokens, eog: eog, walks: 30, steps: 12, seed: 23)
    }
}
