/// A call the model made (or, in a conversation's history, made earlier).
public struct ToolCall: Sendable, Hashable, Codable {
    /// `call_…`: what the tool's result refers to (`tool_call_id`).
    public var id: String
    public var name: String
    /// The arguments as JSON text, exactly as the model wrote them (a JSON object).
    public var arguments: String

    public init(id: String, name: String, arguments: String) {
        self.id = id
        self.name = name
        self.arguments = arguments
    }
}
