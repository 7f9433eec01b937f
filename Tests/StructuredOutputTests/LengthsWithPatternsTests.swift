import Engine
import Testing

@testable import StructuredOutput

/// `minLength`/`maxLength` beside `pattern` (and a `format`): every string of a small alphabet
/// up to a length is accepted exactly when it matches the pattern (`NSRegularExpression`, in
/// `SchemaValidator`) and has a length in the range; a length the pattern implies changes
/// nothing; a split too large is refused naming the length keyword.
@Suite struct LengthsWithPatternsTests {
    static let strings = SchemaCheck.strings(over: ["a", "b", "-", "1"], upTo: 6).map(JSONValue.string)

    @Test func everyAcceptedStringMatchesThePatternAndTheLengths() throws {
        for schema in [
            // One variable part: its count narrowed.
            #"{"type":"string","pattern":"^[ab]+$","minLength":2,"maxLength":4}"#,
            #"{"type":"string","pattern":"^a[ab1]*-$","maxLength":4}"#,
            #"{"type":"string","pattern":"^[ab]{2,}1?$","minLength":3,"maxLength":5}"#,
            // Two variable parts: the lengths split between them.
            #"{"type":"string","pattern":"^[ab]+-[ab1]+$","maxLength":5}"#,
            #"{"type":"string","pattern":"^[ab]+-[ab1]+$","minLength":4,"maxLength":5}"#,
            // Unanchored: the free text around counts too.
            #"{"type":"string","pattern":"a-","minLength":3,"maxLength":4}"#,
            #"{"type":"string","pattern":"^(b|1)","maxLength":3}"#,
            // A repetition of parts of different lengths, unrolled.
            #"{"type":"string","pattern":"^(ab|a|-1-)*$","maxLength":5}"#,
            #"{"type":"string","pattern":"^(a|bb)+$","minLength":3,"maxLength":4}"#,
            // Only a minimum.
            #"{"type":"string","pattern":"^[ab]+-?$","minLength":5}"#,
            // No string of the pattern has such a length.
            #"{"type":"string","pattern":"^[ab]{3}$","maxLength":2}"#,
        ] {
            try SchemaCheck.agree(schema, on: Self.strings)
        }
    }

    /// Escapes count as one character, on both sides of the restriction.
    @Test func escapesCountAsOneCharacter() throws {
        try SchemaCheck.check(
            #"{"type":"string","pattern":"^(a|\")+x*$","maxLength":3}"#,
            accepts: [#""a\"a""#, #""\"\"\"""#, #""\"xx""#], rejects: [#""a\"ax""#, #""\"\"\"\"""#])
        try SchemaCheck.check(
            #"{"type":"string","pattern":"é","minLength":2,"maxLength":2}"#,
            accepts: [#""éa""#, #""\né""#, #""中é""#], rejects: [#""é""#, #""aéa""#])
    }

    /// When the pattern's lengths already lie within the range, the grammar is the pattern's own.
    @Test func impliedLengthsChangeNothing() throws {
        func grammar(_ json: String) throws -> Grammar { try SchemaCheck.schema(json).compile() }
        #expect(
            try grammar(#"{"type":"string","pattern":"^[A-Z]{2}$","minLength":2,"maxLength":2}"#)
                == grammar(#"{"type":"string","pattern":"^[A-Z]{2}$"}"#))
        // A Kubernetes name: the repetition bound (33) keeps it within 63 characters.
        #expect(
            try grammar(#"{"type":"string","pattern":"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$","maxLength":63}"#)
                == grammar(#"{"type":"string","pattern":"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}"#))
        #expect(
            try grammar(#"{"type":"string","format":"uuid","minLength":36,"maxLength":36}"#)
                == grammar(#"{"type":"string","format":"uuid"}"#))
        #expect(
            try grammar(#"{"type":"string","format":"date-time","maxLength":64}"#)
                == grammar(#"{"type":"string","format":"date-time"}"#))
    }

    /// Formats are restricted the same way when the split stays small; past
    /// `maxLengthSplits` options the length keyword is refused, naming the reason.
    @Test func tooManyWaysToSplitAreRefusedNamingTheLengthKeyword() throws {
        try SchemaCheck.check(
            #"{"type":"string","format":"ipv4","maxLength":9}"#, accepts: [#""1.2.3.4""#, #""10.20.3.4""#],
            rejects: [#""10.20.30.4""#, #""192.168.0.1""#])
        for (schema, keyword) in [
            (#"{"type":"string","pattern":"^[a-z]+(-[a-z]+)*$","maxLength":63}"#, "maxLength"),
            (#"{"type":"string","format":"email","minLength":3,"maxLength":254}"#, "minLength"),
        ] {
            let format = try SchemaCheck.schema(schema)
            do {
                _ = try format.compile()
                Issue.record("\(schema) compiled")
            } catch .unsupportedKeyword(let k, let path) {
                #expect(k == keyword, "\(schema)")
                #expect(path.hasPrefix("$ (with ") && path.hasSuffix("ways to split the length)"), "\(path)")
            } catch {
                Issue.record("\(schema): \(error)")
            }
        }
    }
}
