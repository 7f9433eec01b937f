import GenerationVocabulary

/// What a generation answers: a conversation, rendered by the backend's chat template, or a raw
/// prompt, run as given (control tokens spelled in it are parsed, as llama.cpp's completion
/// endpoint does), or token ids a client already has.
public enum PromptInput: Sendable, Equatable {
    /// `extras`: tools and template variables the template is given besides the messages.
    case conversation(instructions: String?, messages: [ChatMessage], extras: TemplateExtras = TemplateExtras())
    case text(String)
    case tokens([Int32])
}

/// What a chat template is given besides the messages: the tools it renders into the prompt (the
/// `tools` variable, as Hugging Face templates read it) and further variables
/// (`chat_template_kwargs`, such as `enable_thinking`) as a JSON object's text.
///
/// `choice` and `parallel` (`tool_choice`, `parallel_tool_calls`) are for a backend that forwards
/// tools to another server (`forwardsTools`); a local template ignores them (its grammar keeps
/// them). Being part of the input, all of it is part of a single-flight key that compares inputs.
public struct TemplateExtras: Sendable, Equatable, Hashable {
    public var tools: [ToolDefinition]
    public var arguments: String?
    public var choice: ToolChoice
    public var parallel: Bool

    public init(
        tools: [ToolDefinition] = [], arguments: String? = nil, choice: ToolChoice = .auto, parallel: Bool = true
    ) {
        self.tools = tools
        self.arguments = arguments
        self.choice = choice
        self.parallel = parallel
    }
}
