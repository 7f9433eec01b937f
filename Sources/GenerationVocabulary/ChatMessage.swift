/// One message of a conversation, as the chat template renders it.
public struct ChatMessage: Sendable, Codable, Equatable {
    public enum Role: String, Sendable, Codable, Equatable, CaseIterable {
        case system
        case user
        case assistant
        /// A tool's result, answering the assistant's call `toolCallID`.
        case tool
    }

    public var role: Role
    public var content: String
    /// An assistant message's calls (the template renders them in the model's own format).
    public var toolCalls: [ToolCall]?
    /// A tool message: the call it answers.
    public var toolCallID: String?
    /// An assistant message's reasoning (thinking templates pass it back as they define).
    public var reasoning: String?

    public init(
        role: Role, content: String, toolCalls: [ToolCall]? = nil, toolCallID: String? = nil, reasoning: String? = nil
    ) {
        self.role = role
        self.content = content
        self.toolCalls = toolCalls
        self.toolCallID = toolCallID
        self.reasoning = reasoning
    }
}
