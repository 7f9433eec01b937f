/// An answer split into its text, its reasoning and its calls.
public struct ParsedAnswer: Sendable, Hashable {
    /// The answer's text outside reasoning and call markup.
    public var content: String
    /// The text inside `<think>…</think>` (without any call markup it held); nil when there is none.
    public var reasoning: String?
    /// The calls in the order written (calls written inside the reasoning first).
    public var calls: [ParsedToolCall]

    public init(content: String, reasoning: String? = nil, calls: [ParsedToolCall] = []) {
        self.content = content
        self.reasoning = reasoning
        self.calls = calls
    }
}
