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
