/// What a request offers the model to call and how: its tools, the choice and whether several
/// calls may come in one answer.
public struct ToolUse: Sendable, Hashable {
    public var tools: [ToolDefinition]
    public var choice: ToolChoice
    /// Several calls in one answer (`parallel_tool_calls`, default true); false: at most one.
    public var parallel: Bool

    public init(tools: [ToolDefinition], choice: ToolChoice = .auto, parallel: Bool = true) {
        self.tools = tools
        self.choice = choice
        self.parallel = parallel
    }
}
