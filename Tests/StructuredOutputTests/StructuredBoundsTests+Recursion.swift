import Engine
import Testing

@testable import StructuredOutput

/// The recursion depth bound: the deepest nesting is accepted, one more refused, and the mask
/// over the default model's vocabulary offers no token that would nest once more.
extension StructuredBoundsTests {
    /// A tree node as `tree.json` has it, through `$defs`, and the same node referring to the
    /// whole schema (`"$ref": "#"`, as `strict-ui-component.json`).
    static let treeThroughDefs = ##"""
        {"$defs":{"node":{"type":"object","properties":{"label":{"type":"string"},
          "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
          "required":["label","children"],"additionalProperties":false}},"$ref":"#/$defs/node"}
        """##
    static let treeThroughRoot = ##"""
        {"type":"object","properties":{"label":{"type":"string"},
          "children":{"type":"array","items":{"$ref":"#"}}},
          "required":["label","children"],"additionalProperties":false}
        """##

    /// `levels` nodes nested in one another, each with one child but the last.
    static func chain(_ levels: Int) -> String {
        levels == 1 ? #"{"label":"a","children":[]}"# : #"{"label":"a","children":["# + chain(levels - 1) + "]}"
    }

    @Test func recursionDepth() throws {
        let d = StructuredBounds.maxRecursionDepth
        #expect(d == 8)
        for schema in [Self.treeThroughDefs, Self.treeThroughRoot] {
            try SchemaCheck.check(schema, accepts: [Self.chain(1), Self.chain(d)], rejects: [Self.chain(d + 1)])
        }
        // An optional member ends the recursion by being left out.
        let list = ##"{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}},"required":["v"]}"##
        func linked(_ n: Int) -> String { n == 1 ? #"{"v":1}"# : #"{"v":1,"next":"# + linked(n - 1) + "}" }
        try SchemaCheck.check(list, accepts: [linked(d)], rejects: [linked(d + 1)])
        // Mutual recursion counts every recursive reference.
        let mutual = ##"""
            {"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/b"}},
              "b":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}}}},"$ref":"#/$defs/a"}
            """##
        // Levels alternate: odd ones arrays, even ones objects; the last is empty.
        func nest(_ level: Int, _ total: Int) -> String {
            let inner = level < total ? nest(level + 1, total) : ""
            return level % 2 == 1 ? "[" + inner + "]" : inner.isEmpty ? "{}" : #"{"a":"# + inner + "}"
        }
        try SchemaCheck.check(mutual, accepts: [nest(1, d)], rejects: [nest(1, d + 1)])
    }

    /// A free value (JSON mode, `{}`, extra members without a schema) nests at most as deep.
    @Test func freeValuesNestAsDeep() throws {
        let d = StructuredBounds.maxRecursionDepth
        func arrays(_ n: Int) -> String { String(repeating: "[", count: n) + String(repeating: "]", count: n) }
        // JSON mode: the object is level 1.
        let m = try SchemaCheck.matcher(.jsonObject)
        #expect(SchemaCheck.accepts(m, #"{"a":"# + arrays(d - 1) + "}"))
        #expect(!SchemaCheck.accepts(m, #"{"a":"# + arrays(d) + "}"))
        // `{}` under a schema: counted from where the free value starts.
        try SchemaCheck.check(
            #"{"type":"object","properties":{"v":{}},"required":["v"]}"#,
            accepts: [#"{"v":"# + arrays(d) + "}", #"{"v":{"x":[1,{"y":null}]}}"#],
            rejects: [#"{"v":"# + arrays(d + 1) + "}"])
    }

    /// Only recursive references count: a chain of distinct `$defs` deeper than the bound is whole.
    @Test func nonRecursiveReferencesAreNotBounded() throws {
        let n = StructuredBounds.maxRecursionDepth + 4
        var defs: [String] = []
        for i in 0..<n {
            let inner = i == n - 1 ? #"{"type":"integer"}"# : ##"{"$ref":"#/$defs/d\##(i + 1)"}"##
            defs.append(#""d\#(i)":{"type":"object","properties":{"x":\#(inner)},"required":["x"]}"#)
        }
        let schema = ##"{"$defs":{\##(defs.joined(separator: ","))},"$ref":"#/$defs/d0"}"##
        let value = String(repeating: #"{"x":"#, count: n) + "7" + String(repeating: "}", count: n)
        try SchemaCheck.check(schema, accepts: [value], rejects: [])
    }

    /// A recursion no instance can end is refused, naming the reference.
    @Test func endlessRecursionIsRefused() throws {
        let schema = ##"{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}"##
        #expect {
            _ = try SchemaCheck.schema(schema).compiledGrammar()
        } throws: { error in
            guard case .invalidSchema(let path, let message)? = error as? StructuredOutputError else { return false }
            return path == "$.properties.next.$ref" && message.contains("can never end")
        }
        // The same with an optional `next` compiles.
        _ = try SchemaCheck.schema(##"{"type":"object","properties":{"next":{"$ref":"#"}}}"##).compiledGrammar()
    }

    /// Allowed tokens, over the default vocabulary, after `prefix`, that satisfy `test` on their bytes.
    static func allowedTokens(
        _ m: GrammarMatcher, after prefix: String, where test: ([UInt8]) -> Bool
    ) throws -> Int {
        let tokenizer = try SchemaCheck.tokenizer.get()
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: tokenizer.endOfGenerationIDs)
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
        defer { allowed.deallocate() }
        m.reset()
        guard m.accept(bytes: Array(prefix.utf8)) else { return -1 }
        m.fillMask(trie: trie, allowed: allowed)
        return (0..<trie.vocabularySize).filter { id in
            guard allowed[id >> 6] >> UInt64(id & 63) & 1 != 0, let b = trie.tokenBytes(Int32(id)) else { return false }
            return test(Array(b))
        }.count
    }

    /// At the deepest level, inside `"children":[`, the mask offers `]` and no token that opens
    /// another node; one level up it still does.
    @Test func theMaskRefusesNestingPastTheBound() throws {
        let d = StructuredBounds.maxRecursionDepth
        let m = try SchemaCheck.matcher(try SchemaCheck.schema(Self.treeThroughDefs))
        func open(_ levels: Int) -> String { String(repeating: #"{"label":"a","children":["#, count: levels) }
        let opensNode: ([UInt8]) -> Bool = { $0.first { ![0x20, 0x0A, 0x09, 0x0D].contains($0) } == 0x7B }
        let closes: ([UInt8]) -> Bool = { $0.first == 0x5D }
        #expect(try Self.allowedTokens(m, after: open(d - 1), where: opensNode) > 0)
        #expect(try Self.allowedTokens(m, after: open(d), where: opensNode) == 0)
        #expect(try Self.allowedTokens(m, after: open(d), where: closes) > 0)
        // An optional member at the deepest level: not even its key may start (the grammar
        // compiler prunes what can no longer be completed), one level up it may.
        let list = try SchemaCheck.matcher(
            try SchemaCheck.schema(
                ##"{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}},"required":["v"]}"##))
        func linked(_ levels: Int) -> String { String(repeating: #"{"v":1,"next":"#, count: levels - 1) + #"{"v":1"# }
        let comma: ([UInt8]) -> Bool = { $0.first == 0x2C }
        #expect(try Self.allowedTokens(list, after: linked(d - 1), where: comma) > 0)
        #expect(try Self.allowedTokens(list, after: linked(d), where: comma) == 0)
    }
}
