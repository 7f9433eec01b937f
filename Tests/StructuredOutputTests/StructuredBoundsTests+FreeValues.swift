import Engine
import Testing

@testable import StructuredOutput

/// Keys the schema does not name have at most `maxKeyLength` characters.
extension StructuredBoundsTests {
    static func key(_ n: Int) -> String { "k" + String(repeating: "y", count: n - 1) }

    @Test func keysTheSchemaDoesNotNameAreBounded() throws {
        let n = StructuredBounds.maxKeyLength
        #expect(n == 64)
        let longest = #"{"\#(Self.key(n))":1}"#
        let tooLong = #"{"\#(Self.key(n + 1))":1}"#
        // Extra members: no listed name, `true`, a schema, and beside a listed name (whose own
        // length the bound does not touch, nor a key that starts like it).
        for schema in [
            #"{"type":"object"}"#, #"{"type":"object","additionalProperties":true}"#,
            #"{"type":"object","additionalProperties":{"type":"integer"}}"#,
        ] {
            try SchemaCheck.check(schema, accepts: [longest, "{}"], rejects: [tooLong])
        }
        let listed = Self.key(n + 10)
        try SchemaCheck.check(
            #"{"type":"object","properties":{"\#(listed)":{"type":"integer"}},"additionalProperties":true}"#,
            accepts: [#"{"\#(listed)":1}"#, longest, #"{"\#(listed)":1,"\#(Self.key(n))":2}"#],
            rejects: [tooLong, #"{"\#(listed)":1,"\#(listed)":2}"#])
        // A name of exactly the bound stays excluded as an extra key; one character off is allowed.
        let exact = Self.key(n)
        try SchemaCheck.check(
            #"{"type":"object","properties":{"\#(exact)":{"type":"string"}},"additionalProperties":{"type":"integer"}}"#,
            accepts: [#"{"\#(exact)":"s"}"#, #"{"\#(Self.key(n - 1))":1}"#], rejects: [#"{"\#(exact)":1}"#])
        // Free objects, in JSON mode and under `{}`: escapes count as one character.
        let m = try SchemaCheck.matcher(.jsonObject)
        #expect(SchemaCheck.accepts(m, longest))
        #expect(SchemaCheck.accepts(m, #"{"\u00e9\#(Self.key(n - 1))":{"\#(Self.key(n))":true}}"#))
        #expect(!SchemaCheck.accepts(m, tooLong))
        #expect(!SchemaCheck.accepts(m, #"{"a":{"\#(Self.key(n + 1))":true}}"#))
        try SchemaCheck.check(
            #"{"type":"object","properties":{"v":{}},"required":["v"]}"#,
            accepts: [#"{"v":\#(longest)}"#], rejects: [#"{"v":\#(tooLong)}"#])
    }

    /// The number of members and elements of a free value is not bounded: a JSON mode answer
    /// may be a list of any length (a bound would cut it silently where the user asked for more).
    @Test func freeListsAreNotCut() throws {
        let n = 200
        let array = "[" + (0..<n).map { "\"s\($0)\"" }.joined(separator: ",") + "]"
        let object = "{" + (0..<n).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
        let m = try SchemaCheck.matcher(.jsonObject)
        #expect(SchemaCheck.accepts(m, object))
        #expect(SchemaCheck.accepts(m, #"{"a":\#(array),"b":[\#(object)]}"#))
    }
}
