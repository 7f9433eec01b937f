import Testing

@testable import Engine

/// A JSON grammar written directly in the IR (the JSON Schema front end has its own tests).
enum ToyJSONGrammar {
    static var grammar: Grammar {
        var g = Grammar(root: "root")
        let ws = GrammarExpression.repetition(.chars(" \n"), minimum: 0, maximum: 3)
        g.rules["root"] = .sequence([.rule("value")])
        g.rules["value"] = .choice([
            .rule("object"), .rule("array"), .rule("string"), .rule("number"), .text("true"), .text("false"),
            .text("null"),
        ])
        g.rules["object"] = .sequence([
            .text("{"), ws,
            .optional(
                .sequence([
                    .rule("member"), .zeroOrMore(.sequence([ws, .text(","), ws, .rule("member")])),
                ])),
            ws, .text("}"),
        ])
        g.rules["member"] = .sequence([.rule("string"), ws, .text(":"), ws, .rule("value")])
        g.rules["array"] = .sequence([
            .text("["), ws,
            .optional(.sequence([.rule("value"), .zeroOrMore(.sequence([ws, .text(","), ws, .rule("value")]))])),
            ws, .text("]"),
        ])
        g.rules["string"] = .sequence([
            .text("\""),
            .zeroOrMore(
                .choice([
                    .characters([0...0x1F, 0x22...0x22, 0x5C...0x5C], negated: true),
                    .sequence([.text("\\"), .chars("\"\\/bfnrt")]),
                ])),
            .text("\""),
        ])
        let digit = GrammarExpression.byteSet([0x30...0x39])
        g.rules["number"] = .sequence([
            .optional(.text("-")), .choice([.text("0"), .sequence([.byteSet([0x31...0x39]), .zeroOrMore(digit)])]),
            .optional(.sequence([.text("."), .oneOrMore(digit)])),
        ])
        return g
    }
}

@Suite struct GrammarMatcherTests {
    func matcher(_ g: Grammar) throws -> GrammarMatcher {
        GrammarMatcher(grammar: try CompiledGrammar(g))
    }

    /// Whether the whole string is a complete match.
    func matches(_ m: GrammarMatcher, _ s: String) -> Bool {
        m.reset()
        return m.accept(bytes: Array(s.utf8)) && m.canEnd
    }

    /// Whether the string is a prefix of some match.
    func isPrefix(_ m: GrammarMatcher, _ s: String) -> Bool {
        m.reset()
        return m.accept(bytes: Array(s.utf8))
    }

    @Test func boundedRepetitionAcceptsExactlyItsCounts() throws {
        let m = try matcher(Grammar(rules: ["root": .repetition(.text("ab"), minimum: 2, maximum: 4)]))
        #expect(!matches(m, ""))
        #expect(!matches(m, "ab"))
        #expect(matches(m, "abab"))
        #expect(matches(m, "ababab"))
        #expect(matches(m, "abababab"))
        #expect(!isPrefix(m, "ababababa"))
        #expect(!isPrefix(m, "aa"))
        m.reset()
        m.accept(bytes: Array("abababab".utf8))
        #expect(m.mustEnd)
    }

    @Test func recursionNestsWithoutBound() throws {
        let m = try matcher(
            Grammar(rules: ["root": .rule("p"), "p": .sequence([.text("("), .zeroOrMore(.rule("p")), .text(")")])]))
        #expect(matches(m, "()"))
        #expect(matches(m, "(()(()()))"))
        let deep = String(repeating: "(", count: 300) + String(repeating: ")", count: 300)
        #expect(matches(m, deep))
        #expect(!matches(m, "(()"))
        #expect(isPrefix(m, "(()"))
        #expect(!isPrefix(m, "())"))
    }

    @Test func aRejectedTokenLeavesTheStateAsItWas() throws {
        let m = try matcher(ToyJSONGrammar.grammar)
        #expect(m.accept(bytes: Array("{\"a\": [1, ".utf8)))
        let before = m.snapshot()
        #expect(!m.accept(bytes: Array("2]]".utf8)))
        #expect(m.snapshot() == before)
        #expect(m.accept(bytes: Array("2]}".utf8)))
        #expect(m.canEnd && m.mustEnd)
    }

    @Test func jsonGrammarAcceptsAndRejects() throws {
        let m = try matcher(ToyJSONGrammar.grammar)
        for good in ["{}", "[1, 2.5, -3]", "{\"k\": {\"n\": [true, null, \"x\\\"y\"]}}", "\"é中😀\"", "0"] {
            #expect(matches(m, good), "\(good)")
        }
        for bad in ["{", "[1,]", "01", "{\"a\" 1}", "\"\u{01}\"", "tru", "[1 2]"] {
            #expect(!matches(m, bad), "\(bad)")
        }
    }

    @Test func characterClassesMatchExactlyTheirScalarsInUTF8() throws {
        let ranges: [ClosedRange<UInt32>] = [
            0x41...0x5A, 0xE9...0xE9, 0x370...0x3FF, 0x4E00...0x9FFF, 0x1F600...0x1F64F,
        ]
        let positive = try matcher(Grammar(rules: ["root": .characters(ranges, negated: false)]))
        let negative = try matcher(Grammar(rules: ["root": .characters(ranges, negated: true)]))
        var rng = SystemRandomNumberGenerator()
        var probes: [UInt32] = [0, 0x40, 0x41, 0x5A, 0x5B, 0x7F, 0x80, 0xE9, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF]
        for r in ranges { probes += [r.lowerBound, r.upperBound, r.lowerBound &- 1, r.upperBound + 1] }
        for _ in 0..<2000 { probes.append(UInt32.random(in: 0...0x10FFFF, using: &rng)) }
        for value in probes {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let inside = ranges.contains { $0.contains(value) }
            let bytes = Array(String(Character(scalar)).utf8)
            positive.reset()
            #expect((positive.accept(bytes: bytes) && positive.canEnd) == inside, "U+\(String(value, radix: 16))")
            negative.reset()
            #expect((negative.accept(bytes: bytes) && negative.canEnd) == !inside, "U+\(String(value, radix: 16))")
        }
        // An encoded surrogate and an overlong form are not characters.
        negative.reset()
        #expect(!negative.accept(bytes: [0xED, 0xA0, 0x80]))
        negative.reset()
        #expect(!negative.accept(bytes: [0xC0, 0x80]))
    }

    @Test func undefinedAndLeftRecursiveRulesAreTypedErrors() {
        #expect(throws: GrammarError.undefinedRule("missing")) {
            try CompiledGrammar(Grammar(rules: ["root": .rule("missing")]))
        }
        #expect(throws: GrammarError.leftRecursion("e")) {
            try CompiledGrammar(
                Grammar(rules: [
                    "root": .rule("e"), "e": .choice([.sequence([.rule("e"), .text("+"), .text("1")]), .text("1")]),
                ]))
        }
        #expect(throws: GrammarError.invalidRepetition("{3,2}")) {
            try CompiledGrammar(Grammar(rules: ["root": .repetition(.text("a"), minimum: 3, maximum: 2)]))
        }
    }

    @Test func maskOverAToyVocabularyEqualsBruteForce() throws {
        let m = try matcher(ToyJSONGrammar.grammar)
        let words = [
            "{", "}", "{\"", "\":", "\"", "a", "ab", "1", "12", ".", ", ", "[", "]", "tr", "ue", "null", " ", "é",
        ]
        var tokens: [[UInt8]?] = words.map { Array($0.utf8) }
        tokens.append(nil)  // a control token
        tokens.append([0xC3])  // half of é
        tokens.append([0xA9])
        let eog: Set<Int32> = [Int32(tokens.count)]
        tokens.append(Array("</s>".utf8))
        let trie = TokenTrie(tokens: tokens, endOfGeneration: eog)
        try MaskCheck.randomWalks(m, trie: trie, tokens: tokens, eog: eog, walks: 40, steps: 30)
    }
}

/// Compares `fillMask` with the brute-force reference along random walks of allowed tokens.
enum MaskCheck {
    static func randomWalks(
        _ m: GrammarMatcher, trie: TokenTrie, tokens: [[UInt8]?], eog: Set<Int32>, walks: Int, steps: Int,
        seed: UInt64 = 7
    ) throws {
        var rng = SeededGenerator(seed: seed)
        let words = (trie.vocabularySize + 63) / 64
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: words)
        defer { allowed.deallocate() }
        for _ in 0..<walks {
            m.reset()
            for _ in 0..<steps {
                m.fillMask(trie: trie, allowed: allowed)
                var fast: [Int32] = []
                for id in 0..<trie.vocabularySize where allowed[id >> 6] >> UInt64(id & 63) & 1 != 0 {
                    fast.append(Int32(id))
                }
                let slow = m.bruteForceMask(tokens: tokens, endOfGeneration: eog).sorted()
                #expect(fast == slow)
                guard fast == slow else { return }
                let choices = fast.filter { !eog.contains($0) }
                guard !choices.isEmpty else { break }
                let pick = choices[Int(rng.next() % UInt64(choices.count))]
                #expect(m.accept(bytes: tokens[Int(pick)]!))
            }
        }
    }
}
