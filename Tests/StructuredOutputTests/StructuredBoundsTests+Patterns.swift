import Testing

@testable import StructuredOutput

/// The bound on a `pattern`'s `+`, `*` and `{m,}`: the most repetitions are accepted, one more
/// refused, and the mask over the default model's vocabulary offers no token that would repeat
/// once more.
extension StructuredBoundsTests {
    @Test func patternRepetitions() throws {
        let k = StructuredBounds.maxPatternRepetitions
        #expect(k == 32)
        func quoted(_ s: String) -> String { "\"" + s + "\"" }
        let digits = { (n: Int) in String(repeating: "4", count: n) }
        try SchemaCheck.check(
            #"{"type":"string","pattern":"^[0-9]+(Mi|Gi)$"}"#, accepts: [quoted("1Mi"), quoted(digits(1 + k) + "Gi")],
            rejects: [quoted(digits(2 + k) + "Gi"), quoted("Mi")])
        try SchemaCheck.check(
            #"{"type":"string","pattern":"^a*$"}"#, accepts: [quoted(""), quoted(String(repeating: "a", count: k))],
            rejects: [quoted(String(repeating: "a", count: k + 1))])
        try SchemaCheck.check(
            #"{"type":"string","pattern":"^(ab){2,}$"}"#, accepts: [quoted(String(repeating: "ab", count: 2 + k))],
            rejects: [quoted("ab"), quoted(String(repeating: "ab", count: 3 + k))])
        // Nested: both the segments and their number.
        let segment = "/" + String(repeating: "s", count: 1 + k)
        try SchemaCheck.check(
            #"{"type":"string","pattern":"^(/[a-z0-9_]+)+$"}"#,
            accepts: [quoted("/a/b_1"), quoted(String(repeating: segment, count: 1 + k))],
            rejects: [quoted(segment + "s"), quoted(String(repeating: "/a", count: 2 + k))])
        // Explicit bounds are kept as written.
        try SchemaCheck.check(
            #"{"type":"string","pattern":"^[a-z]{3,40}$"}"#, accepts: [quoted(String(repeating: "q", count: 40))],
            rejects: [quoted(String(repeating: "q", count: 41))])
    }

    /// After the last digit `+` allows, the mask offers no token that starts with a digit.
    @Test func theMaskRefusesTheRepetitionPastTheBound() throws {
        let k = StructuredBounds.maxPatternRepetitions
        let m = try SchemaCheck.matcher(
            try SchemaCheck.schema(
                #"{"type":"object","properties":{"m":{"type":"string","pattern":"^[0-9]+(Mi|Gi)$"}}}"#))
        let digit: ([UInt8]) -> Bool = { $0.first.map { (0x30...0x39).contains($0) } ?? false }
        #expect(try Self.allowedTokens(m, after: #"{"m":""# + String(repeating: "5", count: k), where: digit) > 0)
        #expect(try Self.allowedTokens(m, after: #"{"m":""# + String(repeating: "5", count: k + 1), where: digit) == 0)
    }
}
