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

/// A grammar: named rules and the one the whole output must match.
public struct Grammar: Sendable, Hashable {
    public var rules: [String: GrammarExpression]
    public var root: String
    /// The output is JSON whose objects must not repeat a key: enforced beside the grammar
    /// (`JSONKeyTracker`), since no context-free grammar can.
    public var distinctObjectKeys = false

    public init(root: String = "root", rules: [String: GrammarExpression] = [:]) {
        self.root = root
        self.rules = rules
    }
}

/// Why a grammar cannot be compiled.
public enum GrammarError: Error, Sendable, Equatable, CustomStringConvertible {
    case undefinedRule(String)
    /// A rule that can reach itself without consuming a byte: the matcher would never stop expanding it.
    case leftRecursion(String)
    case invalidRepetition(String)
    case tooLarge(String)

    public var description: String {
        switch self {
        case .undefinedRule(let name): "rule '\(name)' is used but not defined"
        case .leftRecursion(let name): "rule '\(name)' is left-recursive (it can reach itself before any byte)"
        case .invalidRepetition(let detail): "invalid repetition: \(detail)"
        case .tooLarge(let detail): "grammar too large: \(detail)"
        }
    }
}
