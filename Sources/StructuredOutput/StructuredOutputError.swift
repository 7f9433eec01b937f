/// Why a structured-output request cannot be served: each names where the problem is, so the
/// API can answer 400 with the location.
public enum StructuredOutputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The schema text is not JSON (byte offset).
    case invalidJSON(offset: Int, message: String)
    /// A schema keyword this compiler does not implement, at a JSON path (`$.properties.a`).
    case unsupportedKeyword(keyword: String, path: String)
    /// A keyword whose value is wrong, at a JSON path.
    case invalidSchema(path: String, message: String)
    /// A GBNF grammar that does not parse (1-based line and column).
    case invalidGrammar(line: Int, column: Int, message: String)
    /// A grammar that parses but cannot be compiled (undefined or left-recursive rule, too large).
    case uncompilable(String)

    public var description: String {
        switch self {
        case .invalidJSON(let offset, let message): "invalid JSON at byte \(offset): \(message)"
        case .unsupportedKeyword(let keyword, let path): "unsupported schema keyword '\(keyword)' at \(path)"
        case .invalidSchema(let path, let message): "invalid schema at \(path): \(message)"
        case .invalidGrammar(let line, let column, let message):
            "invalid grammar at line \(line), column \(column): \(message)"
        case .uncompilable(let message): "grammar cannot be compiled: \(message)"
        }
    }

    /// Where the problem is, for an API error's `param`/location.
    public var location: String? {
        switch self {
        case .invalidJSON(let offset, _): "byte \(offset)"
        case .unsupportedKeyword(_, let path), .invalidSchema(let path, _): path
        case .invalidGrammar(let line, let column, _): "line \(line), column \(column)"
        case .uncompilable: nil
        }
    }
}
