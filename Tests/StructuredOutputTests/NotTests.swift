import Engine
import Testing

@testable import StructuredOutput

/// `not`, in the forms the compiler negates exactly: over sample values of every type, the
/// grammar accepts exactly what `SchemaValidator` (which evaluates `not` by its definition)
/// finds valid; other forms are refused naming `not`.
@Suite struct NotTests {
    static let samples: [JSONValue] = try! [
        "null", "true", "false", "0", "1", "3", "7", "-2", "1.5", "-0.25", #""""#, #""a""#,
        #""admin""#, #""admi""#, #""admins""#, #""root""#, #""Root""#, #""ab""#, "[]", "[1]", "{}", #"{"a":1}"#,
        #"{"b":2}"#, #"{"a":1,"b":2}"#, #"{"deprecated":true}"#, #"{"key":"x","deprecated":true}"#, #"{"key":"x"}"#,
    ].map { try JSONParser.parse($0) }

    @Test func negatedTypesValuesAndRequiredNamesAgreeWithTheValidator() throws {
        for schema in [
            #"{"not":{"type":"null"}}"#,
            #"{"not":{"type":["string","object"]}}"#,
            #"{"type":["integer","string"],"not":{"type":"integer"}}"#,
            #"{"type":"number","not":{"type":"integer"}}"#,
            #"{"type":"number","minimum":-1,"maximum":2,"not":{"type":"integer"}}"#,
            #"{"not":{"type":"number"}}"#,
            #"{"not":{"enum":[null,true,"a"]}}"#,
            #"{"type":"integer","not":{"enum":[0,3,1.5]}}"#,
            #"{"type":"string","not":{"enum":["admin","root",""]}}"#,
            #"{"type":"string","maxLength":4,"not":{"const":"ab"}}"#,
            #"{"type":["string","boolean"],"not":{"type":"string","enum":["a",true]}}"#,
            #"{"not":{"required":["deprecated"]}}"#,
            #"{"type":"object","properties":{"key":{"type":"string"},"deprecated":{}},"additionalProperties":false,"not":{"required":["deprecated"]}}"#,
            #"{"type":"object","additionalProperties":true,"not":{"required":["a","b"]}}"#,
            #"{"type":"object","not":{"anyOf":[{"required":["a"]},{"required":["b"]}]}}"#,
            #"{"type":["object","null"],"not":{"type":"object","required":["a"]}}"#,
            #"{"type":["integer","string","null"],"not":{"anyOf":[{"type":"string"},{"enum":[1,3]}]}}"#,
            #"{"allOf":[{"not":{"type":"string"}},{"not":{"type":"array"}}]}"#,
            #"{"anyOf":[{"type":"integer"},{"type":"string"}],"not":{"const":3}}"#,
            #"{"enum":[1,"a",{"a":1},{"b":2}],"not":{"anyOf":[{"const":1},{"required":["a"]}]}}"#,
            #"{"not":{}}"#,
            #"{"not":true}"#,
        ] {
            try SchemaCheck.agree(schema, on: Self.samples)
        }
        // Integers are written as JSON writes them (no `-0`, `1.0`): an excluded one in no spelling.
        try SchemaCheck.check(
            #"{"type":"integer","not":{"const":0}}"#, accepts: ["1", "-1", "10"], rejects: ["0", "-0", "0.0"])
        // Integers written otherwise (`1.0`, `2e3`) are integers: not numbers that are not.
        try SchemaCheck.check(
            #"{"type":"number","not":{"type":"integer"}}"#, accepts: ["1.5", "-0.001", "12.25"],
            rejects: ["1.0", "2e3", "2.5e1", "0", "-0"])
    }

    /// An excluded word cannot come back through another spelling of its characters, and the
    /// other strings can still be written.
    @Test func excludedStringsInAnySpelling() throws {
        try SchemaCheck.check(
            #"{"type":"string","not":{"enum":["admin","a\"b","😀"]}}"#,
            accepts: [
                #""Admin""#, #""\u0041dmin""#, #""admin2""#, #""adm""#, #""a\"""#, #""a\"bc""#, #""😀😀""#,
                #""😁""#, #""\u00e9""#,
            ],
            rejects: [
                #""admin""#, #""\u0061dmin""#, #""admi\u006E""#, #""adm\u0069n""#, #""a\"b""#, #""a\u0022b""#,
                #""😀""#, #""\ud83d\ude00""#, #""\uD83D\uDE00""#,
            ])
    }

    /// What cannot be negated exactly is refused naming `not`.
    @Test func otherFormsAreRefusedNamingNot() throws {
        for (schema, path) in [
            (#"{"not":{"minLength":3}}"#, "$.not ("),
            (#"{"not":{"type":"string","pattern":"^a"}}"#, "$.not ("),
            (#"{"properties":{"p":{"not":{"properties":{"a":{}}}}}}"#, "$.properties.p.not ("),
            (#"{"type":"number","not":{"const":0}}"#, "$.not ("),
            (#"{"type":"string","pattern":"^a","not":{"const":"ab"}}"#, "$.not ("),
            (#"{"type":"string","format":"email","not":{"enum":["a@b.cd"]}}"#, "$.not ("),
            (#"{"type":"array","not":{"const":[]}}"#, "$.not ("),
            (#"{"not":{"oneOf":[{"type":"string"}]}}"#, "$.not ("),
        ] {
            let format = try SchemaCheck.schema(schema)
            do {
                _ = try format.compile()
                Issue.record("\(schema) compiled")
            } catch .unsupportedKeyword(let keyword, let at) {
                #expect(keyword == "not", "\(schema)")
                #expect(at.hasPrefix(path), "\(schema): \(at)")
            } catch {
                Issue.record("\(schema): \(error)")
            }
        }
    }

    /// `not: false` and an absent `not` give the same grammar; `not: {}` matches nothing.
    @Test func trivialNegations() throws {
        func grammar(_ json: String) throws -> Grammar { try SchemaCheck.schema(json).compile() }
        #expect(try grammar(#"{"type":"string","not":false}"#) == grammar(#"{"type":"string"}"#))
        let nothing = try SchemaCheck.matcher(try SchemaCheck.schema(#"{"properties":{"a":{"not":{}}}}"#))
        #expect(SchemaCheck.accepts(nothing, "{}"))
        #expect(!SchemaCheck.accepts(nothing, #"{"a":1}"#))
    }
}
