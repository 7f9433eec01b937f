import Engine
import Foundation
import Testing

@testable import StructuredOutput

/// Schemas as written in the wild (#33): keywords JSON Schema does not define, and those it
/// defines as annotations, change nothing (the grammar is the one of the schema without them);
/// validation keywords the compiler cannot enforce are refused naming the keyword and where it
/// is; the schemas of `Tests/Fixtures/schemas/wild/` compile and accept their own `examples`.
@Suite struct SchemasInTheWildTests {
    static func grammar(_ json: String) throws -> Grammar { try SchemaCheck.schema(json).compile() }

    static func error(_ json: String) throws -> StructuredOutputError? {
        do {
            _ = try SchemaCheck.schema(json).compile()
            return nil
        } catch {
            return error as? StructuredOutputError
        }
    }

    @Test func vendorKeywordsAndAnnotationsChangeNothing() throws {
        let plain = #"""
            {"type":"object","properties":{"id":{"type":"integer","minimum":1},
             "name":{"type":"string","maxLength":40},"tags":{"type":"array","items":{"enum":["a","b"]}}},
             "required":["id"],"additionalProperties":false}
            """#
        let annotated = #"""
            {"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/item.json",
             "$id":"https://example.com/item","$comment":"generated","title":"Item","description":"An item",
             "x-internal":true,"x-go-type":{"import":"x"},"readonly":false,"links":[{"rel":"self","href":"/items/{id}"}],
             "self":{"href":"/items"},"faker":"lorem.word","_format":"item","examples":[{"id":1}],"default":{},
             "deprecated":false,"readOnly":true,"writeOnly":false,"contentMediaType":"application/json",
             "contentEncoding":"7bit","$defs":{"unused":{"type":"string","dependencies":{"a":["b"]}}},
             "definitions":{"also":{"if":{"type":"string"},"then":{"minLength":1}}},
             "type":"object","properties":{
               "id":{"type":"integer","minimum":1,"readonly":true,"x-order":1,"title":"ID","example":3},
               "name":{"type":"string","maxLength":40,"_format":"name","faker":"name.findName","examples":["Ann"]},
               "tags":{"type":"array","items":{"enum":["a","b"],"x-enum-varnames":["A","B"]},"x-nullable":false,
                       "maxContains":3,"then":{"type":"string"}}},
             "required":["id"],"additionalProperties":false,"strict":true,"name":"item"}
            """#
        #expect(try Self.grammar(annotated) == Self.grammar(plain))
        // Beside `$ref`, annotations of any kind stay allowed.
        let ref =
            ##"{"$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n","x-note":"n","description":"d"}},"additionalProperties":false}"##
        let bare =
            ##"{"$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}},"additionalProperties":false}"##
        #expect(try Self.grammar(ref) == Self.grammar(bare))
    }

    /// A misspelled validation keyword is an unknown keyword: ignored, as the specification
    /// says and every validator does (documented in docs/structured-output.md).
    @Test func aMisspelledValidationKeywordIsAnAnnotation() throws {
        #expect(
            try Self.grammar(#"{"type":"string","maxlength":3,"Pattern":"^a$"}"#) == Self.grammar(#"{"type":"string"}"#)
        )
        #expect(
            try Self.grammar(#"{"type":"object","properties":{"a":{}},"requried":["a"]}"#)
                == Self.grammar(#"{"type":"object","properties":{"a":{}}}"#))
    }

    /// Every validation keyword the compiler cannot enforce, refused naming it and the path of
    /// the schema that holds it, wherever it is.
    @Test func stillRefusedValidationKeywordsNameTheKeywordAndThePath() throws {
        let cases: [(keyword: String, schema: String)] = [
            ("multipleOf", #"{"type":"integer","multipleOf":5}"#),
            ("minProperties", #"{"type":"object","minProperties":1}"#),
            ("maxProperties", #"{"type":"object","maxProperties":3}"#),
            ("patternProperties", #"{"type":"object","patternProperties":{"^x-":{}}}"#),
            ("propertyNames", #"{"type":"object","propertyNames":{"maxLength":3}}"#),
            ("dependencies", #"{"type":"object","dependencies":{"a":["b"]}}"#),
            ("dependentRequired", #"{"type":"object","dependentRequired":{"a":["b"]}}"#),
            ("dependentSchemas", #"{"type":"object","dependentSchemas":{"a":{"required":["b"]}}}"#),
            ("unevaluatedProperties", #"{"type":"object","unevaluatedProperties":false}"#),
            ("contains", #"{"type":"array","contains":{"type":"integer"}}"#),
            ("minContains", #"{"type":"array","minContains":2,"contains":{"type":"integer"}}"#),
            ("unevaluatedItems", #"{"type":"array","unevaluatedItems":false}"#),
            ("if", #"{"if":{"type":"string"},"then":{"minLength":1}}"#),
            ("else", #"{"else":{"type":"string"},"if":{"type":"integer"}}"#),
            ("$dynamicRef", ##"{"$dynamicRef":"#node"}"##),
            ("$recursiveRef", ##"{"$recursiveRef":"#"}"##),
        ]
        for (keyword, inner) in cases {
            let nested = #"{"type":"object","properties":{"list":{"type":"array","items":"# + inner + "}}}"
            let found = try Self.error(nested)
            #expect(
                found == .unsupportedKeyword(keyword: keyword, path: "$.properties.list.items"),
                "\(keyword): \(String(describing: found))")
            #expect(try Self.error(inner) == .unsupportedKeyword(keyword: keyword, path: "$"), "\(keyword)")
        }
        // Inside `$defs`, refused where a `$ref` reads it, with the definition's path.
        #expect(
            try Self.error(
                ##"{"$defs":{"d":{"type":"object","minProperties":1}},"properties":{"a":{"$ref":"#/$defs/d"}}}"##)
                == .unsupportedKeyword(keyword: "minProperties", path: "#/$defs/d"))
        // Beside `$ref`, a validation keyword is still refused (its meaning changed between drafts).
        #expect(
            try Self.error(##"{"$defs":{"n":{"type":"integer"}},"$ref":"#/$defs/n","maximum":3}"##)
                == .unsupportedKeyword(keyword: "maximum", path: "$ (beside $ref)"))
    }

    /// JSON Schema makes some validation keywords inert without their partner; those are
    /// annotations too.
    @Test func validationKeywordsWithoutTheirPartnerChangeNothing() throws {
        let base = try Self.grammar(#"{"type":"integer"}"#)
        for inert in [
            #"{"type":"integer","then":{"maximum":3}}"#, #"{"type":"integer","else":{"maximum":3}}"#,
            #"{"type":"integer","if":{"maximum":3}}"#, #"{"type":"integer","minContains":1,"maxContains":2}"#,
            #"{"type":"integer","additionalItems":false}"#, #"{"type":"integer","not":false}"#,
        ] {
            #expect(try Self.grammar(inert) == base, "\(inert)")
        }
    }

    /// A nested `$id` (draft 4: `id`) starts a resource of its own, where `#…` points into it: a
    /// local `$ref` inside would be resolved against the wrong document, so it is refused; at
    /// the root, as a bare fragment, or with no reference inside, it is ignored.
    @Test func embeddedResourcesWithLocalReferencesAreRefused() throws {
        #expect(
            try Self.error(
                ##"{"type":"object","properties":{"a":{"$id":"https://example.com/a.json","$defs":{"x":{"type":"string"}},"properties":{"b":{"$ref":"#/$defs/x"}}}}}"##
            )
                == .unsupportedKeyword(
                    keyword: "$id", path: "$.properties.a (a resource of its own: its '#' references point into it)"))
        #expect(
            try Self.error(
                ##"{"definitions":{"a":{"id":"a.json","items":{"$ref":"#/definitions/b"}},"b":{"type":"string"}},"$ref":"#/definitions/a"}"##
            )
                == .unsupportedKeyword(
                    keyword: "id", path: "$.definitions.a (a resource of its own: its '#' references point into it)"))
        for fine in [
            ##"{"$id":"https://example.com/root.json","definitions":{"b":{"type":"string"}},"items":{"$ref":"#/definitions/b"}}"##,
            ##"{"definitions":{"a":{"id":"#a","items":{"$ref":"#/definitions/b"}},"b":{"type":"string"}},"$ref":"#/definitions/a"}"##,
            ##"{"properties":{"a":{"$id":"https://example.com/a.json","type":"integer"}}}"##,
        ] {
            #expect(try Self.error(fine) == nil, "\(fine)")
        }
    }

    /// Draft 4's forms: `items` as an array (the tuple) with `additionalItems`, and the boolean
    /// `exclusiveMinimum`/`exclusiveMaximum`.
    @Test func draft4TuplesAndBooleanExclusiveBounds() throws {
        try SchemaCheck.check(
            #"{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}"#,
            accepts: ["[]", #"["a"]"#, #"["a",1]"#], rejects: [#"["a",1,2]"#, "[1]", #"["a","b"]"#])
        try SchemaCheck.check(
            #"{"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"boolean"},"minItems":2}"#,
            accepts: [#"["a",true]"#, #"["a",true,false]"#], rejects: [#"["a"]"#, #"["a",1]"#])
        try SchemaCheck.check(
            #"{"type":"array","items":[{"type":"string"}]}"#, accepts: [#"["a",1,{}]"#], rejects: ["[1]"])
        let m = try SchemaCheck.matcher(
            try SchemaCheck.schema(
                #"{"type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":true}"#))
        for n in -3...13 { #expect(SchemaCheck.accepts(m, String(n)) == (1...9).contains(n), "\(n)") }
        try SchemaCheck.check(
            #"{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":1,"exclusiveMaximum":false}"#,
            accepts: ["0.5", "1"], rejects: ["0", "-0.5", "1.5"])
    }

    // MARK: The wild corpus

    static let directory = SchemaCheck.packageRoot.appendingPathComponent("Tests/Fixtures/schemas/wild")

    static func wild() throws -> [(name: String, schema: JSONValue)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            return (name, try JSONParser.parse(text))
        }
    }

    /// Each schema compiles, its grammar is the one of the schema stripped of every keyword that
    /// is not a validation keyword (vendor keywords and annotations removed at every level), and
    /// it accepts each of the schema's own `examples` (written compactly, members in the schema's
    /// order), which `SchemaValidator` also finds valid.
    @Test func wildSchemasCompileIgnoringTheirAnnotationsAndAcceptTheirExamples() throws {
        let corpus = try Self.wild()
        #expect(corpus.count >= 10)
        for (name, schema) in corpus {
            let grammar: Grammar
            do {
                grammar = try StructuredFormat.jsonSchema(schema).compile()
            } catch {
                Issue.record("\(name): \(error)")
                continue
            }
            #expect(try StructuredFormat.jsonSchema(WildSchemaStripper.strip(schema)).compile() == grammar, "\(name)")
            let m = try SchemaCheck.matcher(.jsonSchema(schema))
            guard case .array(let examples)? = schema["examples"], !examples.isEmpty else {
                Issue.record("\(name) has no examples")
                continue
            }
            for example in examples {
                #expect(
                    SchemaValidator(root: schema).errors(example, schema).isEmpty, "\(name): \(example.compactText)")
                #expect(SchemaCheck.accepts(m, example.compactText), "\(name) should accept \(example.compactText)")
            }
        }
    }
}
