/// One piece of a grammar, before compilation: what the front ends (JSON Schema, GBNF, regular
/// expressions) build. Output is matched as bytes; `characters` is a set of Unicode scalars,
/// compiled to the UTF-8 byte sequences that spell them.
public indirect enum GrammarExpression: Sendable, Hashable {
    /// Exactly these bytes.
    case literal([UInt8])
    /// One byte in any of these ranges.
    case byteSet([ClosedRange<UInt8>])
    /// One Unicode scalar in any of these ranges (or, `negated`, in none of them), as UTF-8.
    case characters([ClosedRange<UInt32>], negated: Bool)
    case sequence([GrammarExpression])
    case choice([GrammarExpression])
    /// `minimum` to `maximum` (nil: unbounded) repetitions.
    case repetition(GrammarExpression, minimum: Int, maximum: Int?)
    /// The rule of that name.
    case rule(String)

    /// The text, byte for byte.
    public static func text(_ s: String) -> GrammarExpression { .literal(Array(s.utf8)) }
    /// Matches the empty string.
    public static var empty: GrammarExpression { .sequence([]) }
    public static func optional(_ e: GrammarExpression) -> GrammarExpression {
        .repetition(e, minimum: 0, maximum: 1)
    }
    public static func zeroOrMore(_ e: GrammarExpression) -> GrammarExpression {
        .repetition(e, minimum: 0, maximum: nil)
    }
    public static func oneOrMore(_ e: GrammarExpression) -> GrammarExpression {
        .repetition(e, minimum: 1, maximum: nil)
    }
    /// One character out of a string of ASCII characters (`chars("+-")`).
    public static func chars(_ s: String) -> GrammarExpression {
        .characters(s.unicodeScalars.map { $0.value...$0.value }, negated: false)
    }
}
