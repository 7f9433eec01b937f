import Backend
import Engine
import ToolCalling

/// Tool calling for a conversation on this host's model: the call format (the `tool_call_format`
/// setting, else read from the chat template), how the conversation is prompted and the
/// constraint keeping the request's tool rules. Nil when the request neither gives tools nor
/// carries tool turns in its history. Shared by chat completions and the Responses API, which
/// differ only in how they name their fields (`ToolFieldNames`).
///
/// A backend that forwards tools (`forwardsTools`, a remote engine) gets them as they are (the
/// upstream prompts and samples), no grammar is built, and its answer, with the calls written in
/// the `generic` markup, is read with `GenericFormat`; `rules` then keeps the request's tool use,
/// checked against what came back (`ToolRules`), since nothing here enforced it.
///
/// The constraint is made once the prompt is rendered (`ChatToolCalling.finish`): a prompt that
/// opens `<think>` changes the grammar (the reasoning must close) and where a reasoning budget
/// starts counting.
struct ChatToolCalling {
    var format: any ToolCallFormat
    let prompt: ToolPrompt
    var constraint: (any GenerationConstraint)? = nil
    var rules: ToolUse? = nil
    /// The tools whose grammar `finish` builds (nil: no grammar, as without tools or over a
    /// remote engine).
    var use: ToolUse? = nil
    /// The template thinks (answers may open with `<think>…</think>`).
    var reasoning = false
}

/// The request fields a tool-calling refusal names, per API surface.
struct ToolFieldNames: Sendable {
    /// The conversation's field (`messages`, `input`).
    var messages: String
    /// The structured-output field that cannot be combined with tools.
    var format: String
    /// Chat nests a function under `function`; the Responses API's tools are flat.
    var flat: Bool

    static let chat = ToolFieldNames(messages: "messages", format: "response_format", flat: false)
    static let responses = ToolFieldNames(messages: "input", format: "text.format", flat: true)
    /// `/v1/generations` and session turns: flat tools, like the Responses API's.
    static let native = ToolFieldNames(messages: "tool_results", format: "options.format", flat: true)

    /// The field holding tool `index`'s parameters schema.
    func parameters(_ index: Int) -> String {
        flat ? "tools[\(index)].parameters" : "tools[\(index)].function.parameters"
    }
    /// The field holding a named `tool_choice`'s function name.
    var choiceName: String { flat ? "tool_choice.name" : "tool_choice.function.name" }
}

extension ChatToolCalling {
    static func make(
        _ backend: any GenerationBackend, for chat: OpenAIChatRequest, setting: ToolCallFormatSetting
    ) throws(OpenAIError) -> ChatToolCalling? {
        try make(
            backend, messages: chat.messages, tools: chat.tools, hasFormat: chat.parameters.options.format != nil,
            templateArguments: chat.templateArguments, splitsReasoning: true, setting: setting, names: .chat)
    }

    /// `hasFormat`: the request also asks for structured output (refused together with tools).
    /// `splitsReasoning`: without tools, a thinking model's answer is still read for its
    /// reasoning (chat's `reasoning_content`).
    static func make(
        _ backend: any GenerationBackend, messages: [ChatMessage], tools: ToolUse?, hasFormat: Bool,
        templateArguments: String? = nil, splitsReasoning: Bool = false, setting: ToolCallFormatSetting,
        names: ToolFieldNames
    ) throws(OpenAIError) -> ChatToolCalling? {
        try make(
            backend, history: messages.contains { $0.role == .tool || !($0.toolCalls ?? []).isEmpty }, tools: tools,
            hasFormat: hasFormat, templateArguments: templateArguments, splitsReasoning: splitsReasoning,
            setting: setting, names: names)
    }

    /// `history`: the conversation holds tool turns (earlier calls or results), which are then
    /// prompted in the format's way even when this request gives no tools.
    static func make(
        _ backend: any GenerationBackend, history: Bool, tools: ToolUse?, hasFormat: Bool,
        templateArguments: String? = nil, splitsReasoning: Bool = false, setting: ToolCallFormatSetting,
        names: ToolFieldNames
    ) throws(OpenAIError) -> ChatToolCalling? {
        if hasFormat, tools != nil {
            throw .unsupported(
                "\(names.format) (or grammar) together with tools is not supported: the tools' grammar shapes the answer",
                param: names.format)
        }
        if backend.chatTemplateSource == nil, backend.forwardsTools {
            return try forwarded(
                tools: tools, history: history, splitsReasoning: splitsReasoning, names: names)
        }
        let reasoning = thinks(backend.chatTemplateSource, arguments: templateArguments)
        guard tools != nil || history else {
            // No tools: a thinking model's answers still keep their reasoning apart.
            guard reasoning, splitsReasoning else { return nil }
            let format = ReasoningFormat()
            return ChatToolCalling(
                format: format, prompt: ToolPrompt(format: format, rendersTools: true), reasoning: true)
        }
        guard let source = backend.chatTemplateSource else {
            throw .unsupported(
                "tools: tool calling needs the model's chat template; this backend has none here",
                param: tools != nil ? "tools" : names.messages)
        }
        let format = setting.format(templateSource: source)
        let rendersTools = format.name != "generic" && backend.rendersTools
        return ChatToolCalling(
            format: format, prompt: ToolPrompt(format: format, rendersTools: rendersTools), use: tools,
            reasoning: reasoning)
    }

    /// For a backend that forwards tools: the upstream's reasoning comes back as a leading
    /// `<think>…</think>`, so even without tools its (chat) answers are read for reasoning. The
    /// rules are checked against the answer by chat completions only (`ToolRules`), so the
    /// Responses API refuses tools over a remote engine rather than pass them unchecked.
    static func forwarded(tools: ToolUse?, history: Bool, splitsReasoning: Bool, names: ToolFieldNames)
        throws(OpenAIError) -> ChatToolCalling?
    {
        guard tools != nil || history else {
            guard splitsReasoning else { return nil }
            let format = ReasoningFormat()
            return ChatToolCalling(format: format, prompt: ToolPrompt(format: format, rendersTools: true))
        }
        guard names.messages == ToolFieldNames.chat.messages else {
            throw .unsupported(
                "tools: function tools over a remote engine (backend openai) are served by chat completions only",
                param: tools != nil ? "tools" : names.messages)
        }
        if case .function(let name) = tools?.choice, tools?.tools.contains(where: { $0.name == name }) != true {
            throw .invalid("tool_choice.function.name '\(name)' is not one of the tools", param: names.choiceName)
        }
        let format = GenericFormat()
        return ChatToolCalling(format: format, prompt: ToolPrompt(format: format, rendersTools: true), rules: tools)
    }

    /// Whether answers may open with reasoning: the template knows `<think>` (Qwen 3, DeepSeek R1
    /// distills) and `chat_template_kwargs` does not turn thinking off (`enable_thinking: false`,
    /// which such templates answer by closing an empty `<think></think>` in the prompt).
    static func thinks(_ source: String?, arguments: String?) -> Bool {
        guard source?.contains("<think>") == true else { return false }
        return !(arguments?.contains(#""enable_thinking":false"#) ?? false)
    }
}
