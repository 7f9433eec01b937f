/// A grammar flattened for the matcher: every rule is a list of alternatives, every alternative
/// a run of positions in one array, each position a byte set (a terminal), a reference to a rule,
/// or the end of its alternative. Nested choices and repetitions became rules of their own
/// (repetition as right recursion, which the matcher runs without growing its stack).
public struct CompiledGrammar: Sendable {
    enum Kind: UInt8 {
        case terminal = 0
        case reference = 1
        case end = 2
    }

    /// Per position: what it is, and its byte set's index or its rule's id.
    var kinds: [Kind] = []
    var arguments: [Int32] = []
    /// 256-bit byte sets, four words each.
    var sets: [UInt64] = []
    /// Per rule: its alternatives' first positions are `alternatives[ruleStart[r]..<ruleEnd[r]]`.
    var alternatives: [Int32] = []
    var ruleStart: [Int32] = []
    var ruleEnd: [Int32] = []
    var ruleNames: [String] = []
    var root: Int32 = 0
    /// See `Grammar.distinctObjectKeys`.
    public var distinctObjectKeys = false
    /// Counted repetitions of one unit (see `CompiledGrammar+Units.swift`): per rule, the unit
    /// rule it repeats (-1: not such a rule) and how many more units it allows (-1: unbounded).
    var repeatUnit: [Int32] = []
    var repeatCount: [Int32] = []
    /// Per rule: whether it can match the empty string, and the bytes it can start with (4 words).
    var ruleNullable: [Bool] = []
    var ruleFirst: [UInt64] = []
    /// The rules that are repeated as units and can be counted, with what the matcher needs.
    var units: [UnitRule] = []

    public var positionCount: Int { kinds.count }
    public var ruleCount: Int { ruleNames.count }

    @inline(__always)
    func terminal(_ position: Int32, matches byte: UInt8) -> Bool {
        let set = Int(arguments[Int(position)]) &* 4
        return sets[set &+ Int(byte >> 6)] >> UInt64(byte & 63) & 1 != 0
    }

    public init(_ grammar: Grammar) throws(GrammarError) {
        var compiler = GrammarCompiler(grammar: grammar)
        self = try compiler.compile()
    }

    init() {}
}
