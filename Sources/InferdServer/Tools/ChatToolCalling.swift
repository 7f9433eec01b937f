import Backend
import Engine
import ToolCalling

/// Tool calling for a chat request on this host's model: the call format (the `tool_call_format`
/// setting, else read from the chat template), how the conversation is prompted and the
/// constraint keeping the request's tool rules. Nil when the request neither gives tools nor
/// carries tool turns in its history.
struct ChatToolCalling {
    let format: any ToolCallFormat
    let prompt: ToolPrompt
    let constraint: (any GenerationConstraint)?
}

extension ChatToolCalling {
    static func make(
        _ backend: any GenerationBackend, for chat: OpenAIChatRequest, setting: ToolCallFormatSetting
    ) throws(OpenAIError) -> ChatToolCalling? {
        let history = chat.messages.contains { $0.role == .tool || !($0.toolCalls ?? []).isEmpty }
        let reasoning = thinks(backend.chatTemplateSource, arguments: chat.templateArguments)
        guard chat.tools != nil || history else {
            // No tools: a thinking model's answers still keep their reasoning apart.
            guard reasoning else { return nil }
            let format = ReasoningFormat()
            return ChatToolCalling(
                format: format, prompt: ToolPrompt(format: format, rendersTools: true), constraint: nil)
        }
        guard let source = backend.chatTemplateSource else {
            throw .unsupported(
                "tools: tool calling needs the model's chat template; this backend has none here",
                param: chat.tools != nil ? "tools" : "messages")
        }
        if chat.parameters.options.format != nil, chat.tools != nil {
            throw .unsupported(
                "response_format (or grammar) together with tools is not supported: the tools' grammar shapes the answer",
                param: "response_format")
        }
        let format = setting.format(templateSource: source)
        let rendersTools = format.name != "generic" && backend.rendersTools
        let constraint = try chat.tools.flatMap { use throws(OpenAIError) in
            try ToolConstraint.make(use, format: format, reasoning: reasoning, backend: backend)
        }
        return ChatToolCalling(
            format: format, prompt: ToolPrompt(format: format, rendersTools: rendersTools), constraint: constraint)
    }

    /// Whether answers may open with reasoning: the template knows `<think>` (Qwen 3, DeepSeek R1
    /// distills) and `chat_template_kwargs` does not turn thinking off (`enable_thinking: false`,
    /// which such templates answer by closing an empty `<think></think>` in the prompt).
    static func thinks(_ source: String?, arguments: String?) -> Bool {
        guard source?.contains("<think>") == true else { return false }
        return !(arguments?.contains(#""enable_thinking":false"#) ?? false)
    }
}
