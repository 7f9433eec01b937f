/// Why a chat template could not be parsed or rendered. Templates come from model files and
/// are untrusted: every failure, including a template that runs past a bound, is one of these.
public enum JinjaError: Error, Equatable, CustomStringConvertible {
    /// The template text is not valid Jinja (for the subset the interpreter knows).
    case syntax(line: Int, message: String)
    /// A value was used in a way its type does not allow, or an unknown name was called.
    case evaluation(String)
    /// The template called `raise_exception(message)`.
    case raised(String)
    /// The template went past one of `JinjaLimits`.
    case limitExceeded(JinjaLimits.Bound, limit: Int)

    public var description: String {
        switch self {
        case .syntax(let line, let message): return "template syntax error on line \(line): \(message)"
        case .evaluation(let message): return "template error: \(message)"
        case .raised(let message): return "the template raised an error: \(message)"
        case .limitExceeded(let bound, let limit):
            return "the template went past its bound on \(bound.rawValue) (at most \(limit))"
        }
    }
}
