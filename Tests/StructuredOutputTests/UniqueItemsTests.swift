import Engine
import Testing

@testable import StructuredOutput

/// `uniqueItems: true`: over a finite set of scalars, every array of those values up to a
/// length is accepted exactly when no value repeats (as JSON: `1` and `1.0` are equal) and the
/// counts hold; an array of at most one element needs nothing; anything else is refused
/// naming `uniqueItems`.
@Suite struct UniqueItemsTests {
    /// Every array of at most `length` elements written from `spellings`.
    static func arrays(of spellings: [String], upTo length: Int) throws -> [JSONValue] {
        var out: [[String]] = [[]]
        var last: [[String]] = [[]]
        for _ in 0..<length {
            last = last.flatMap { a in spellings.map { a + [$0] } }
            out += last
        }
        return try out.map { try JSONParser.parse("[" + $0.joined(separator: ",") + "]") }
    }

    @Test func acceptedArraysNeverRepeatAValue() throws {
        // `1` and `1.0` are one value: both spellings are in the enum, at most one is written.
        try SchemaCheck.agree(
            #"{"type":"array","items":{"enum":["x","y",1,1.0,true]},"uniqueItems":true}"#,
            on: try Self.arrays(of: [#""x""#, #""y""#, "1", "1.0", "true", "null", "2"], upTo: 4))
        // Values are written as the schema spells them.
        let values = try Self.arrays(of: [#""x""#, #""y""#, "1", "true", "null", "2"], upTo: 4)
        for schema in [
            #"{"type":"array","items":{"enum":["x","y",1,true,null]},"uniqueItems":true,"minItems":2,"maxItems":3}"#,
            #"{"type":"array","items":{"type":"boolean"},"uniqueItems":true}"#,
            #"{"type":"array","items":{"type":["boolean","null"]},"uniqueItems":true,"minItems":1}"#,
            #"{"type":"array","items":{"const":"x"},"uniqueItems":true}"#,
            #"{"type":"array","items":{"enum":["x","y",1],"type":"string"},"uniqueItems":true}"#,
            #"{"type":"array","items":{"enum":["x","y",1,2],"not":{"const":1}},"uniqueItems":true,"maxItems":2}"#,
            #"{"uniqueItems":true,"items":{"enum":[1,2,"x"]},"minItems":4}"#,
        ] {
            try SchemaCheck.agree(schema, on: values)
        }
    }

    /// A bounded integer's values (written as JSON writes integers).
    @Test func boundedIntegers() throws {
        try SchemaCheck.check(
            #"{"type":"array","items":{"type":"integer","minimum":1,"exclusiveMaximum":4},"uniqueItems":true}"#,
            accepts: ["[]", "[3]", "[1,2,3]", "[3, 1]"], rejects: ["[1,1]", "[2,3,2]", "[4]", "[0]", "[1,2,3,1]"])
    }

    /// Through a `$ref`, as schemas in the wild write it.
    @Test func itemsThroughAReference() throws {
        try SchemaCheck.check(
            ##"{"$defs":{"day":{"enum":["mon","tue","wed"]}},"type":"array","items":{"$ref":"#/$defs/day"},"uniqueItems":true}"##,
            accepts: ["[]", #"["tue","mon"]"#, #"["wed", "mon", "tue"]"#],
            rejects: [#"["mon","mon"]"#, #"["tue","wed","tue"]"#, #"["thu"]"#])
    }

    /// At most one element: nothing to keep distinct, so the grammar is the one without it;
    /// `uniqueItems: false` changes nothing either.
    @Test func atMostOneElementOrFalseChangeNothing() throws {
        func grammar(_ json: String) throws -> Grammar { try SchemaCheck.schema(json).compile() }
        #expect(
            try grammar(#"{"type":"array","items":{"type":"string"},"maxItems":1,"uniqueItems":true}"#)
                == grammar(#"{"type":"array","items":{"type":"string"},"maxItems":1}"#))
        #expect(
            try grammar(#"{"type":"array","prefixItems":[{"type":"object"}],"items":false,"uniqueItems":true}"#)
                == grammar(#"{"type":"array","prefixItems":[{"type":"object"}],"items":false}"#))
        #expect(
            try grammar(#"{"type":"array","items":{"type":"string"},"uniqueItems":false}"#)
                == grammar(#"{"type":"array","items":{"type":"string"}}"#))
    }

    @Test func otherElementsAreRefusedNamingUniqueItems() throws {
        for (schema, path) in [
            (#"{"type":"array","items":{"type":"string"},"uniqueItems":true}"#, "$"),
            (#"{"type":"array","uniqueItems":true,"maxItems":2}"#, "$"),
            (#"{"properties":{"t":{"type":"array","items":{"type":"object"},"uniqueItems":true}}}"#, "$.properties.t"),
            (#"{"type":"array","prefixItems":[{"type":"boolean"},{"type":"boolean"}],"uniqueItems":true}"#, "$"),
            (#"{"type":"array","items":{"type":"integer","minimum":0},"uniqueItems":true}"#, "$"),
            (#"{"type":"array","items":{"enum":[1,2,3,4,5,6,7,8,9,10]},"uniqueItems":true}"#, "$"),
        ] {
            let format = try SchemaCheck.schema(schema)
            do {
                _ = try format.compile()
                Issue.record("\(schema) compiled")
            } catch .unsupportedKeyword(let keyword, let at) {
                #expect(keyword == "uniqueItems", "\(schema)")
                #expect(at.hasPrefix(path + " ("), "\(schema): \(at)")
            } catch {
                Issue.record("\(schema): \(error)")
            }
        }
        // Ten values are 1,024 sets; with at most 3 of them written, 176.
        _ = try SchemaCheck.schema(
            #"{"type":"array","items":{"enum":[1,2,3,4,5,6,7,8,9,10]},"uniqueItems":true,"maxItems":3}"#
        ).compile()
    }
}
