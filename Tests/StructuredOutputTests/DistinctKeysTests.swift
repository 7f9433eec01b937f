import Testing

@testable import Engine
@testable import StructuredOutput

/// Keys stay distinct within one object (`JSONKeyTracker`): at every point of a JSON answer the
/// processor's mask over the default vocabulary is exactly the grammar's brute-force mask less
/// the tokens that would close a key equal to an earlier key of the same object.
@Suite struct DistinctKeysTests {
    /// An independent reference: whether `text` (a JSON prefix) repeats a key in some object,
    /// with a stack of key sets.
    static func repeatsAKey(_ text: [UInt8]) -> Bool {
        var objects: [Set<[UInt8]>?] = []  // nil: an array
        var expectKey = false
        var key: [UInt8]? = nil
        var inString = false
        var escape = false
        for c in text {
            if inString {
                if escape {
                    escape = false
                } else if c == UInt8(ascii: "\\") {
                    escape = true
                } else if c == UInt8(ascii: "\"") {
                    inString = false
                    if let k = key {
                        if objects[objects.count - 1]!.contains(k) { return true }
                        objects[objects.count - 1]!.insert(k)
                    }
                    key = nil
                    continue
                }
                key?.append(c)
                continue
            }
            switch c {
            case UInt8(ascii: "{"): objects.append([]); expectKey = true
            case UInt8(ascii: "["): objects.append(nil); expectKey = false
            case UInt8(ascii: "}"), UInt8(ascii: "]"): objects.removeLast(); expectKey = false
            case UInt8(ascii: ","): expectKey = objects.last.map { $0 != nil } ?? false
            case UInt8(ascii: "\""):
                inString = true
                key = expectKey && objects.last.map({ $0 != nil }) == true ? [] : nil
                expectKey = false
            default: break
            }
        }
        return false
    }

    struct Setup {
        let trie: TokenTrie
        let tokens: [[UInt8]?]
        let byBytes: [[UInt8]: Int32]
        let eog: Set<Int32>

        init() throws {
            let tokenizer = try SchemaCheck.tokenizer.get()
            let eog = tokenizer.endOfGenerationIDs
            let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: eog)
            let tokens = (0..<Int32(trie.vocabularySize)).map { trie.tokenBytes($0).map(Array.init) }
            var map: [[UInt8]: Int32] = [:]
            for (id, b) in tokens.enumerated() { if let b, map[b] == nil { map[b] = Int32(id) } }
            self.eog = eog
            self.trie = trie
            self.tokens = tokens
            byBytes = map
        }

        /// `text` as tokens, longest match first.
        func tokenize(_ text: String) -> [Int32] {
            let bytes = Array(text.utf8)
            var out: [Int32] = []
            var i = 0
            while i < bytes.count {
                var n = min(bytes.count - i, trie.maxDepth)
                while n > 1 && byBytes[Array(bytes[i..<i + n])] == nil { n -= 1 }
                out.append(byBytes[Array(bytes[i..<i + n])]!)
                i += n
            }
            return out
        }
    }

    /// The processor's allowed tokens after `prefix` (fed token by token) and the reference's.
    static func masks(_ format: StructuredFormat, _ prefix: String, _ s: Setup) throws -> (Set<Int32>, Set<Int32>) {
        let grammar = try format.compiledGrammar()
        #expect(grammar.distinctObjectKeys)
        let processor = GrammarConstraint(grammar: grammar, trie: s.trie, identity: "test").makeProcessor()
        for t in s.tokenize(prefix) { #expect(processor.accept(token: t), "\(prefix)") }
        var logits = [Float](repeating: 0, count: s.trie.vocabularySize)
        logits.withUnsafeMutableBufferPointer { processor.process(logits: $0) }
        let fast = Set(logits.indices.filter { logits[$0] == 0 }.map(Int32.init))
        let m = GrammarMatcher(grammar: grammar)
        #expect(m.accept(bytes: Array(prefix.utf8)))
        let text = Array(prefix.utf8)
        let reference = Set(
            m.bruteForceMask(tokens: s.tokens, endOfGeneration: s.eog).filter { id in
                s.eog.contains(id) || !repeatsAKey(text + s.tokens[Int(id)]!)
            })
        return (fast, reference)
    }

    /// A key written to the length bound equal to an earlier one can only be closed: the mask
    /// then lets the duplicate through rather than leave no token (which ended the answer
    /// mid-key, `finish_reason` stop and no JSON: seen with k8s-service.json under a frequency
    /// penalty). Below the bound the duplicate is still refused.
    @Test func aKeyAtTheLengthBoundEqualToAnEarlierOneCanStillBeClosed() throws {
        let s = try Setup()
        let n = StructuredBounds.maxKeyLength
        let key = StructuredBoundsTests.key(n)
        let shorter = StructuredBoundsTests.key(n - 1)
        let quote = s.byBytes[Array("\"".utf8)]!
        let map = StructuredFormat.jsonSchema(
            try JSONParser.parse(#"{"type":"object","additionalProperties":{"type":"integer"}}"#))
        for format in [map, .jsonObject] {
            let (atBound, _) = try Self.masks(format, #"{"\#(key)":1,"\#(key)"#, s)
            #expect(!atBound.isEmpty)
            #expect(atBound.contains(quote), "the only way on is to close the key")
            let grammar = try format.compiledGrammar()
            let processor = GrammarConstraint(grammar: grammar, trie: s.trie, identity: "t").makeProcessor()
            for t in s.tokenize(#"{"\#(key)":1,"\#(key)"#) { #expect(processor.accept(token: t)) }
            var logits = [Float](repeating: 0, count: s.trie.vocabularySize)
            logits.withUnsafeMutableBufferPointer { processor.process(logits: $0) }
            #expect(!processor.mustEnd, "the answer goes on to a value")
            for eog in s.eog where Int(eog) < logits.count { #expect(logits[Int(eog)] == -.infinity) }
            let (below, reference) = try Self.masks(format, #"{"\#(shorter)":1,"\#(shorter)"#, s)
            #expect(!below.contains(quote))
            #expect(below == reference)
        }
    }

    @Test func theMaskLeavesOutExactlyTheTokensThatRepeatAKey() throws {
        let s = try Setup()
        let map = StructuredFormat.jsonSchema(
            try JSONParser.parse(#"{"type":"object","additionalProperties":{"type":["integer","object","array"]}}"#))
        for format in [map, .jsonObject] {
            for prefix in [
                #"{"data":1,""#, #"{"data":1,"da"#, #"{"data":1,"data"#, #"{"data":1,"#, #"{"data":1, "#,
                #"{"a":{"b":1},""#, #"{"a":{"b":1,""#, #"{"a":[{"b":1}],"b":2,""#, #"{"k":[{"k":1},{""#,
            ] {
                let (fast, reference) = try Self.masks(format, prefix, s)
                #expect(fast == reference, "\(prefix): \(fast.symmetricDifference(reference).count) differ")
                #expect(!fast.isEmpty)
            }
        }
        // What that means for a model: after `{"data":1,"data` the closing quote is refused,
        // after `{"data":1,"dat` it is not (`"dat"` is a new key).
        let quote = s.byBytes[Array("\"".utf8)]!
        let (afterRepeat, _) = try Self.masks(map, #"{"data":1,"data"#, s)
        let (afterNew, _) = try Self.masks(map, #"{"data":1,"dat"#, s)
        #expect(!afterRepeat.contains(quote) && afterNew.contains(quote))
    }

    /// The reference itself finds repeats (so the comparison above means something).
    @Test func theReferenceFindsRepeats() {
        #expect(Self.repeatsAKey(Array(#"{"a":1,"a""#.utf8)))
        #expect(Self.repeatsAKey(Array(#"{"a":{"x":1},"a""#.utf8)))
        #expect(!Self.repeatsAKey(Array(#"{"a":{"a":1},"b""#.utf8)))
        #expect(!Self.repeatsAKey(Array(#"[{"a":1},{"a""#.utf8)))
    }
}
