import Foundation
import Testing

@testable import StructuredOutput

/// `format: byte` (OpenAPI's base64): the grammar accepts exactly the canonical base64 texts
/// (Foundation decodes them and encodes the bytes back to the same text), checked over every
/// string of a small alphabet up to 8 characters, and with `minLength`/`maxLength` the groups
/// are counted.
@Suite struct ByteFormatTests {
    /// `A` and `w` may stand before padding, `z` may not (its low bits are not zero).
    static let strings = SchemaCheck.strings(over: ["A", "w", "z", "="], upTo: 8).map(JSONValue.string)

    @Test func acceptsExactlyCanonicalBase64() throws {
        try SchemaCheck.agree(#"{"type":"string","format":"byte"}"#, on: Self.strings)
        try SchemaCheck.check(
            #"{"format":"byte"}"#,
            accepts: [
                #""""#, #""aGVsbG8=""#, #""aGVsbG8gd29ybGQ=""#, #""YQ==""#, #""+/+/""#,
                "\"" + Data((0..<200).map { UInt8($0) }).base64EncodedString() + "\"",
            ],
            rejects: [#""aGVsbG8""#, #""YR==""#, #""Y===""#, #""a GV""#, #""aGVsbG8-""#, #""=AAA""#, #""YQ==YQ==""#])
    }

    @Test func lengthsCountGroups() throws {
        try SchemaCheck.agree(#"{"type":"string","format":"byte","minLength":3,"maxLength":8}"#, on: Self.strings)
        try SchemaCheck.agree(#"{"type":"string","format":"byte","maxLength":3}"#, on: Self.strings)
    }
}
