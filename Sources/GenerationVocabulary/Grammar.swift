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
