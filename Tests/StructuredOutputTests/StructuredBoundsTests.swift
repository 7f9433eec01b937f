import Engine
import Testing

@testable import StructuredOutput

/// Each bound of `StructuredBounds` is enforced by the compiled grammar: the longest value the
/// bound admits is accepted and one character more is refused (by the matcher, and for the
/// integer digits by the mask over the default model's vocabulary too).
@Suite struct StructuredBoundsTests {

    static func digits(_ n: Int, first: Character = "9") -> String {
        String(first) + String(repeating: "7", count: n - 1)
    }

    @Test func integerDigits() throws {
        let n = StructuredBounds.maxIntegerDigits
        #expect(n == 16)
        for schema in [#"{"type":"integer"}"#, #"{"type":"number"}"#] {
            try SchemaCheck.check(
                schema, accepts: [Self.digits(n), "-" + Self.digits(n)],
                rejects: [Self.digits(n + 1), "-" + Self.digits(n + 1)])
        }
        // One side bounded: the other side is bounded by the digit count.
        try SchemaCheck.check(
            #"{"type":"integer","minimum":3}"#, accepts: [Self.digits(n), "3"],
            rejects: [Self.digits(n + 1), "2", "-" + Self.digits(n)])
        try SchemaCheck.check(
            #"{"type":"integer","maximum":-5}"#, accepts: ["-" + Self.digits(n), "-5"],
            rejects: ["-" + Self.digits(n + 1), "-4"])
        // Explicit bounds stay exact.
        try SchemaCheck.check(
            #"{"type":"integer","minimum":-120,"maximum":999}"#, accepts: ["-120", "999", "0"],
            rejects: ["-121", "1000"])
        // JSON mode too: a number anywhere in the object.
        let m = try SchemaCheck.matcher(.jsonObject)
        #expect(SchemaCheck.accepts(m, #"{"a":[\#(Self.digits(n))]}"#))
        #expect(!SchemaCheck.accepts(m, #"{"a":[\#(Self.digits(n + 1))]}"#))
    }

    @Test func fractionAndExponentDigits() throws {
        let f = StructuredBounds.maxFractionDigits
        let e = StructuredBounds.maxExponentDigits
        #expect(f == 16 && e == 3)
        let fraction = String(repeating: "3", count: f)
        try SchemaCheck.check(
            #"{"type":"number"}"#, accepts: ["1.\(fraction)", "1.5e\(Self.digits(e))", "2E-\(Self.digits(e))"],
            rejects: ["1.\(fraction)3", "1.5e\(Self.digits(e + 1))"])
        // With bounds (a non-zero digit somewhere in the fraction): the same count.
        let zeros = String(repeating: "0", count: f - 1)
        try SchemaCheck.check(
            #"{"type":"number","minimum":0,"maximum":10}"#,
            accepts: ["0.\(zeros)1", "9.\(fraction)", "10", "3.50"],
            rejects: ["0.\(zeros)01", "9.\(fraction)3", "0.\(zeros)0", "10.5", "1e2"])
    }

    @Test func fractionOfASecond() throws {
        let n = StructuredBounds.maxSecondFractionDigits
        #expect(n == 9)
        let nine = String(repeating: "5", count: n)
        try SchemaCheck.check(
            #"{"type":"string","format":"time"}"#, accepts: [#""10:20:30.\#(nine)Z""#, #""10:20:30Z""#],
            rejects: [#""10:20:30.\#(nine)5Z""#])
        try SchemaCheck.check(
            #"{"type":"string","format":"date-time"}"#, accepts: [#""2026-12-01T10:20:30.\#(nine)+01:00""#],
            rejects: [#""2026-12-01T10:20:30.\#(nine)5+01:00""#])
    }

    static func label(_ n: Int) -> String { "a" + String(repeating: "b", count: n - 1) }

    @Test func hostnameLabelsAndLength() throws {
        #expect(StructuredBounds.maxLabelLength == 63 && StructuredBounds.maxHostnameLength == 253)
        let s = #"{"type":"string","format":"hostname"}"#
        let longest = [63, 63, 63, 61].map(Self.label).joined(separator: ".")
        #expect(longest.count == 253)
        let eightShort = [String](repeating: Self.label(30), count: 8).joined(separator: ".")
        try SchemaCheck.check(
            s, accepts: [#""\#(longest)""#, #""\#(eightShort)""#, #""a""#, #""mail.eu.example.co.uk""#],
            rejects: [
                #""\#(Self.label(64))""#,  // a label of 64
                #""\#([63, 63, 63, 62].map(Self.label).joined(separator: "."))""#,  // 254 characters
                #""\#(eightShort).a""#,  // 9 labels
                #""\#([30, 30, 30, 30, 31].map(Self.label).joined(separator: "."))""#,  // 5 labels, one of 31
            ])
        // An email's domain follows the same rule; its local part has at most 64 characters.
        #expect(StructuredBounds.maxEmailLocalLength == 64)
        try SchemaCheck.check(
            #"{"type":"string","format":"email"}"#,
            accepts: [#""\#(Self.label(64))@\#(longest)""#], rejects: [#""\#(Self.label(65))@example.com""#])
    }

    static func object(_ listed: String, extra count: Int) -> String {
        let extras = (0..<count).map { #""k\#($0)":\#($0)"# }
        return "{" + ([listed].filter { !$0.isEmpty } + extras).joined(separator: ",") + "}"
    }

    @Test func extraProperties() throws {
        let n = StructuredBounds.maxExtraProperties
        #expect(n == 16)
        // Absent beside `properties`: no extra member.
        try SchemaCheck.check(
            #"{"type":"object","properties":{"a":{"type":"integer"}}}"#, accepts: [#"{"a":1}"#, "{}"],
            rejects: [Self.object(#""a":1"#, extra: 1), Self.object("", extra: 1)])
        // `true`, a schema, or an object schema without either keyword: up to the bound.
        for schema in [
            #"{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true}"#,
            #"{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"integer"}}"#,
        ] {
            try SchemaCheck.check(
                schema, accepts: [Self.object(#""a":1"#, extra: n), Self.object("", extra: n)],
                rejects: [Self.object(#""a":1"#, extra: n + 1), Self.object("", extra: n + 1)])
        }
        try SchemaCheck.check(
            #"{"type":"object"}"#, accepts: [Self.object("", extra: n), "{}"], rejects: [Self.object("", extra: n + 1)])
    }

    /// The mask itself refuses a 17th digit: after 16 digits no token that starts with a digit
    /// is allowed, after 15 some are.
    @Test func theMaskRefusesTheDigitPastTheBound() throws {
        let tokenizer = try SchemaCheck.tokenizer.get()
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: tokenizer.endOfGenerationIDs)
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
        defer { allowed.deallocate() }
        let m = try SchemaCheck.matcher(
            try SchemaCheck.schema(#"{"type":"object","properties":{"n":{"type":"integer"}}}"#))
        func digitTokensAllowed(after prefix: String) -> Int {
            m.reset()
            guard m.accept(bytes: Array(prefix.utf8)) else { return -1 }
            m.fillMask(trie: trie, allowed: allowed)
            return (0..<trie.vocabularySize).filter { id in
                guard allowed[id >> 6] >> UInt64(id & 63) & 1 != 0, let b = trie.tokenBytes(Int32(id)) else {
                    return false
                }
                return b.first.map { (0x30...0x39).contains($0) } ?? false
            }.count
        }
        let n = StructuredBounds.maxIntegerDigits
        #expect(digitTokensAllowed(after: #"{"n":"# + Self.digits(n - 1)) > 0)
        #expect(digitTokensAllowed(after: #"{"n":"# + Self.digits(n)) == 0)
        #expect(digitTokensAllowed(after: #"{"n":-"# + Self.digits(n)) == 0)
    }
}
