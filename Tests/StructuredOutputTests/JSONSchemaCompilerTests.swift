import Engine
import Testing

@testable import StructuredOutput

@Suite struct JSONSchemaCompilerTests {

    @Test func typesAndNullable() throws {
        try SchemaCheck.check(#"{"type":"string"}"#, accepts: [#""a""#, #""\"é\\n""#], rejects: ["1", "null", #""a"#])
        try SchemaCheck.check(
            #"{"type":"integer"}"#, accepts: ["0", "-12", "345"], rejects: ["01", "1.5", "-", "\"1\""])
        try SchemaCheck.check(
            #"{"type":"number"}"#, accepts: ["0", "-1.25", "3e10", "2.5E-3"], rejects: ["1.", ".5", "+1"])
        try SchemaCheck.check(#"{"type":"boolean"}"#, accepts: ["true", "false"], rejects: ["1", "null"])
        try SchemaCheck.check(#"{"type":["string","null"]}"#, accepts: ["null", #""x""#], rejects: ["1"])
        try SchemaCheck.check(#"{"type":"integer","nullable":true}"#, accepts: ["null", "7"], rejects: ["\"7\""])
        try SchemaCheck.check(#"{"type":"null"}"#, accepts: ["null"], rejects: ["0"])
    }

    @Test func propertiesInOrderWithRequiredAndOptional() throws {
        let s = #"""
            {"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"},"c":{"type":"boolean"}},
             "required":["a"],"additionalProperties":false}
            """#
        try SchemaCheck.check(
            s,
            accepts: [
                #"{"a":"x"}"#, #"{"b":1,"a":"x"}"#, #"{"b": 1, "a": "x", "c": true}"#, #"{"a":"x","c":false}"#,
                "{\n  \"a\": \"x\"\n}",
            ],
            rejects: [#"{}"#, #"{"b":1}"#, #"{"a":"x","b":1}"#, #"{"a":"x","d":1}"#, #"{"a":1}"#, #"{,"a":"x"}"#])
    }

    @Test func additionalPropertiesTrueOrSchemaNeverRepeatAListedKey() throws {
        let s = #"""
            {"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":true}
            """#
        try SchemaCheck.check(
            s, accepts: [#"{"name":"x","age":3}"#, #"{"name":"x","nam":1,"names":2}"#],
            rejects: [#"{"name":"x","name":3}"#])
        try SchemaCheck.check(
            #"{"type":"object","additionalProperties":{"type":"integer"}}"#, accepts: [#"{}"#, #"{"a":1,"b":2}"#],
            rejects: [#"{"a":"x"}"#])
    }

    @Test func enumConstAnyOfOneOf() throws {
        try SchemaCheck.check(
            #"{"enum":["red","green",3,null]}"#, accepts: [#""red""#, "3", "null"], rejects: [#""blue""#, "4"])
        try SchemaCheck.check(#"{"const":{"k":[1,2]}}"#, accepts: [#"{"k":[1,2]}"#], rejects: [#"{"k":[1]}"#])
        try SchemaCheck.check(
            #"{"anyOf":[{"type":"integer"},{"type":"string","maxLength":2}]}"#, accepts: ["1", #""ab""#],
            rejects: [#""abc""#, "true"])
        try SchemaCheck.check(
            #"{"oneOf":[{"type":"boolean"},{"type":"null"}]}"#, accepts: ["true", "null"], rejects: ["0"])
    }

    @Test func allOfMergesObjectSchemas() throws {
        let s = #"""
            {"allOf":[{"type":"object","properties":{"a":{"type":"integer"},"b":{}},"required":["a"],
                       "additionalProperties":false},
                      {"properties":{"b":{"type":"string"}},"required":["b"]}]}
            """#
        try SchemaCheck.check(
            s, accepts: [#"{"a":1,"b":"x"}"#],
            rejects: [#"{"a":1}"#, #"{"b":"x"}"#, #"{"a":1,"b":2}"#, #"{"a":1,"b":"x","c":1}"#])
    }

    /// A part's `additionalProperties: false` rejects the properties the other parts add (the
    /// schema below accepts no object with `a` or `b`); merged member by member it would accept
    /// them, so it is refused instead.
    @Test func allOfBesideAClosedPartThatExcludesItsPropertiesIsRefused() throws {
        let s = #"""
            {"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                      {"properties":{"b":{"type":"string"}},"required":["b"]}],"additionalProperties":false}
            """#
        do {
            _ = try (try SchemaCheck.schema(s)).compile()
            Issue.record("compiled a schema whose merge would widen it")
        } catch let e as StructuredOutputError {
            #expect(
                e
                    == .unsupportedKeyword(
                        keyword: "allOf",
                        path: "$.allOf[0] (property 'a' is added beside a part whose additionalProperties excludes it)")
            )
        }
    }

    @Test func recursiveReferences() throws {
        let s = #"""
            {"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{
              "value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
              "required":["value","children"],"additionalProperties":false}}}
            """#
        try SchemaCheck.check(
            s, accepts: [#"{"value":1,"children":[]}"#, #"{"value":1,"children":[{"value":2,"children":[]}]}"#],
            rejects: [#"{"value":1,"children":[{"value":2}]}"#])
        try SchemaCheck.check(
            ##"{"definitions":{"n":{"type":["integer","array"],"items":{"$ref":"#/definitions/n"}}},"$ref":"#/definitions/n"}"##,
            accepts: ["[1,[2,[3]]]", "4"], rejects: ["[\"a\"]"])
    }

    @Test func arraysWithItemsPrefixItemsAndCounts() throws {
        try SchemaCheck.check(
            #"{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3}"#,
            accepts: ["[1]", "[1, 2, 3]"], rejects: ["[]", "[1,2,3,4]", "[\"a\"]"])
        try SchemaCheck.check(
            #"{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}"#,
            accepts: ["[]", #"["a"]"#, #"["a",1]"#], rejects: [#"["a",1,2]"#, "[1]"])
        try SchemaCheck.check(
            #"{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"},"minItems":2}"#,
            accepts: [#"["a",true]"#, #"["a",true,false]"#], rejects: [#"["a"]"#, #"["a",1]"#])
        try SchemaCheck.check(#"{"type":"array","maxItems":0}"#, accepts: ["[]"], rejects: ["[1]"])
    }

    @Test func stringLengthsPatternsAndFormats() throws {
        try SchemaCheck.check(
            #"{"type":"string","minLength":2,"maxLength":3}"#, accepts: [#""ab""#, #""a\"c""#, #""日本語""#],
            rejects: [#""a""#, #""abcd""#])
        try SchemaCheck.check(
            #"{"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"}"#, accepts: [#""AB-123""#],
            rejects: [#""AB-12""#, #""ab-123""#, #""xAB-123""#])
        try SchemaCheck.check(
            #"{"type":"string","pattern":"cat|dog"}"#, accepts: [#""a cat""#, #""dog""#], rejects: [#""cow""#])
        try SchemaCheck.check(
            #"{"type":"string","format":"date-time"}"#,
            accepts: [#""2024-02-29T13:45:00Z""#, #""2024-12-01T00:00:00.5+02:00""#],
            rejects: [#""2024-13-01T00:00:00Z""#, #""2024-02-29 13:45:00Z""#])
        try SchemaCheck.check(#"{"format":"date"}"#, accepts: [#""1999-01-31""#], rejects: [#""1999-1-31""#])
        try SchemaCheck.check(#"{"format":"time"}"#, accepts: [#""23:59:59Z""#], rejects: [#""24:00:00Z""#])
        try SchemaCheck.check(
            #"{"format":"email"}"#, accepts: [#""a.b+c@example.co.uk""#], rejects: [#""a@b""#, #""@x.y""#])
        try SchemaCheck.check(
            #"{"format":"uuid"}"#, accepts: [#""123e4567-e89b-12d3-a456-426614174000""#], rejects: [#""123e4567""#])
        try SchemaCheck.check(
            #"{"format":"ipv4"}"#, accepts: [#""192.168.0.255""#], rejects: [#""256.1.1.1""#, #""01.1.1.1""#])
        try SchemaCheck.check(
            #"{"format":"ipv6"}"#, accepts: [#""::1""#, #""fe80::1:2""#, #""1:2:3:4:5:6:7:8""#], rejects: [#""1:::2""#])
        try SchemaCheck.check(#"{"format":"uri"}"#, accepts: [#""https://x.org/a?b=c#d""#], rejects: [#""no scheme""#])
        try SchemaCheck.check(#"{"format":"hostname"}"#, accepts: [#""a-b.example.com""#], rejects: [#""-a.com""#])
    }

    @Test func integerAndNumberBounds() throws {
        try SchemaCheck.check(
            #"{"type":"integer","minimum":-15,"maximum":120}"#, accepts: ["-15", "-1", "0", "7", "99", "120"],
            rejects: ["-16", "121", "1000", "-100"])
        try SchemaCheck.check(
            #"{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10}"#, accepts: ["1", "9"],
            rejects: ["0", "10"])
        try SchemaCheck.check(
            #"{"type":"integer","minimum":18}"#, accepts: ["18", "99", "12345"], rejects: ["17", "5", "-20"])
        try SchemaCheck.check(#"{"type":"integer","maximum":-3}"#, accepts: ["-3", "-400"], rejects: ["-2", "0", "5"])
        try SchemaCheck.check(
            #"{"type":"number","minimum":0,"maximum":1}"#, accepts: ["0", "1", "0.5", "0.25"],
            rejects: ["-0.5", "1.5", "2", "-1"])
        try SchemaCheck.check(
            #"{"type":"number","minimum":-2,"exclusiveMaximum":3}"#, accepts: ["-2", "-1.5", "-0.1", "2.9"],
            rejects: ["-2.5", "3", "3.1"])
        // Every integer in a range, and none just outside it, checked exhaustively.
        let m = try SchemaCheck.matcher(try SchemaCheck.schema(#"{"type":"integer","minimum":-37,"maximum":1234}"#))
        for n in -200...1500 {
            #expect(SchemaCheck.accepts(m, String(n)) == (-37...1234).contains(n), "\(n)")
        }
    }

    @Test func unsupportedKeywordsNameTheKeywordAndPath() throws {
        func error(_ schema: String) throws -> StructuredOutputError? {
            do {
                _ = try (try SchemaCheck.schema(schema)).compile()
                return nil
            } catch {
                return error as? StructuredOutputError
            }
        }
        if case .unsupportedKeyword("uniqueItems", let path)? = try error(
            #"{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}"#)
        {
            #expect(path.hasPrefix("$.properties.a ("))
        } else {
            Issue.record("uniqueItems over values of any kind must be refused naming it")
        }
        #expect(
            try error(#"{"not":{"minLength":2}}"#)
                == .unsupportedKeyword(
                    keyword: "not", path: "$.not (only type, enum, const, required and anyOf of those can be negated)"))
        #expect(
            try error(#"{"type":"string","format":"binary"}"#)
                == .unsupportedKeyword(keyword: "format", path: "$.format ('binary')"))
        #expect(
            try error(#"{"type":"number","multipleOf":0.5}"#) == .unsupportedKeyword(keyword: "multipleOf", path: "$"))
        #expect(
            try error(#"{"type":"number","minimum":0.5}"#)
                == .unsupportedKeyword(keyword: "minimum", path: "$.minimum (a non-integer bound on a number)"))
        if case .invalidSchema(let path, _)? = try error(##"{"$ref":"#/$defs/missing"}"##) {
            #expect(path == "$.$ref")
        } else {
            Issue.record("a missing reference must be an invalid schema")
        }
    }

    @Test func jsonModeAcceptsAnyObjectOnlyAndBoundsWhitespace() throws {
        let m = try SchemaCheck.matcher(.jsonObject)
        #expect(SchemaCheck.accepts(m, #"{"a":[1,{"b":null}],"c":"d"}"#))
        #expect(SchemaCheck.accepts(m, "{\n  \"a\": 1\n}"))
        #expect(!SchemaCheck.accepts(m, "[1]"))
        #expect(!SchemaCheck.accepts(m, "\"x\""))
        let maxSpaces = String(repeating: " ", count: JSONGrammar.maxIndent)
        #expect(SchemaCheck.accepts(m, "{" + maxSpaces + "}"))
        m.reset()
        #expect(!m.accept(bytes: Array(("{" + maxSpaces + " ").utf8)), "more spaces than the bound")
        m.reset()
        #expect(!m.accept(bytes: Array("{\n\n\n".utf8)), "more newlines than the bound")
    }

    @Test func theParserKeepsKeyOrder() throws {
        let v = try JSONParser.parse(#"{"z":1,"a":{"y":true,"b":null},"m":[1.50,"\u00e9"]}"#)
        #expect(v.objectMembers?.map(\.key) == ["z", "a", "m"])
        #expect(v["a"]?.objectMembers?.map(\.key) == ["y", "b"])
        #expect(v.compactText == #"{"z":1,"a":{"y":true,"b":null},"m":[1.50,"é"]}"#)
        #expect(throws: StructuredOutputError.invalidJSON(offset: 5, message: "expected ':'")) {
            try JSONParser.parse(#"{"a" 1}"#)
        }
    }
}
