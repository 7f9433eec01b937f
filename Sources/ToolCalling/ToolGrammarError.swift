/// Why no grammar can be made for a request's tools: the API answers 400 with it.
public enum ToolGrammarError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A `strict` tool whose `parameters` schema uses a keyword the schema compiler cannot
    /// enforce, at that JSON path of the schema.
    case unenforceable(tool: String, keyword: String, path: String)
    /// `tool_choice` names a function that is not among the tools.
    case unknownTool(String)
    /// A `strict` tool whose `parameters` is not a valid schema (not JSON, or a keyword's value wrong).
    case invalidSchema(tool: String, path: String, message: String)
    /// `tool_choice` requires a call but no tools were given.
    case noTools

    public var description: String {
        switch self {
        case .unenforceable(let tool, let keyword, let path):
            "tool '\(tool)' is strict but its parameters use '\(keyword)' at \(path), which cannot be enforced"
        case .unknownTool(let name): "tool_choice names '\(name)', which is not among the tools"
        case .invalidSchema(let tool, let path, let message):
            "tool '\(tool)' is strict but its parameters are not a valid schema at \(path): \(message)"
        case .noTools: "tool_choice requires a call but no tools were given"
        }
    }
}
