/// A function the model may call: OpenAI's `tools[].function` (chat) or a Responses API
/// `function` tool, as every layer speaks of it.
public struct ToolDefinition: Sendable, Hashable, Codable {
    public var name: String
    public var description: String?
    /// The JSON Schema of the arguments, as compact JSON text; nil: any JSON object.
    public var parameters: String?
    /// The arguments must match `parameters` (enforced by the grammar, or the request refused).
    public var strict: Bool

    public init(name: String, description: String? = nil, parameters: String? = nil, strict: Bool = false) {
        self.name = name
        self.description = description
        self.parameters = parameters
        self.strict = strict
    }
}
