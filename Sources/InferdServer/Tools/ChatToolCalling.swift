import Backend
import Engine
import ToolCalling

/// Tool calling for a chat request on this host's model: the call format (the `tool_call_format`
/// setting, else read from the chat template), how the conversation is prompted and the
/// constraint keeping the request's tool rules. Nil when the request neither gives tools nor
/// carries tool turns in its history.
///
/// A backend that forwards tools (`forwardsTools`, a remote engine) gets them as they are (the
/// upstream prompts and samples), no grammar is built, and its answer, with the calls written in
/// the `generic` markup, is read with `GenericFormat`; `rules` then keeps the request's tool use,
/// checked against what came back (`ToolRules`), since nothing here enforced it.
struct ChatToolCalling {
    let format: any ToolCallFormat
    let prompt: ToolPrompt
    let constraint: (any GenerationConstraint)?
    var rules: ToolUse? = nil
}

extension ChatToolCalling {
    static func make(
        _ backend: any GenerationBackend, for chat: OpenAIChatRequest, setting: ToolCallFormatSetting
    ) throws(OpenAIError) -> ChatToolCalling? {
        let history = chat.messages.contains { $0.role == .tool || !($0.toolCalls ?? []).isEmpty }
        if backend.chatTemplateSource == nil, backend.forwardsTools {
            return try forwarded(chat, history: history)
        }
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

    /// For a backend that forwards tools: the upstream's reasoning comes back as a leading
    /// `<think>…</think>`, so even without tools its answers are read for reasoning.
    static func forwarded(_ chat: OpenAIChatRequest, history: Bool) throws(OpenAIError) -> ChatToolCalling {
        guard chat.tools != nil || history else {
            let format = ReasoningFormat()
            return ChatToolCalling(
                format: format, prompt: ToolPrompt(format: format, rendersTools: true), constraint: nil)
        }
        if chat.parameters.options.format != nil, chat.tools != nil {
            throw .unsupported(
                "response_format (or grammar) together with tools is not supported: the tools' grammar shapes the answer",
                param: "response_format")
        }
        if case .function(let name) = chat.tools?.choice, chat.tools?.tools.contains(where: { $0.name == name }) != true
        {
            throw .invalid(
                "tool_choice.function.name '\(name)' is not one of the tools", param: "tool_choice.function.name")
        }
        let format = GenericFormat()
        return ChatToolCalling(
            format: format, prompt: ToolPrompt(format: format, rendersTools: true), constraint: nil,
            rules: chat.tools)
    }

    /// Whether answers may open with reasoning: the template knows `<think>` (Qwen 3, DeepSeek R1
    /// distills) and `chat_template_kwargs` does not turn thinking off (`enable_thinking: false`,
    /// which such templates answer by closing an empty `<think></think>` in the prompt).
    static func thinks(_ source: String?, arguments: String?) -> Bool {
        guard source?.contains("<think>") == true else { return false }
        return !(arguments?.contains(#""enable_thinking":false"#) ?? false)
    }
}
