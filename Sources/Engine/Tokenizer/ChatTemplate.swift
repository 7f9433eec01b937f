import Foundation

/// Renders conversations into prompts by running a chat template (Jinja) with the bounded
/// interpreter in `Sources/Engine/Template`: the model's own `tokenizer.chat_template`, or a
/// built-in or file given as an override (`--chat-template`).
///
/// Output keeps provenance: text from the template's literals (and `bos_token`/`eos_token`)
/// becomes `.template` pieces, where control-token spellings become those tokens; text from
/// messages becomes `.text` pieces, so content that spells `<|im_start|>` stays plain text.
public struct ChatTemplate: Sendable {
    /// Where the template came from, for messages: "built-in llama3", "tokenizer.chat_template", a file.
    public let origin: String
    /// The Jinja source.
    public let source: String
    /// Tokens the template's format ends a turn with (`<|im_end|>`, `<|eot_id|>`,
    /// `<end_of_turn>`, …, and the EOS token when the template writes `eos_token`), as found
    /// in the vocabulary; generation should stop on them as well as on the tokenizer's own.
    public let endOfGenerationIDs: Set<Int32>
    let template: JinjaTemplate
    let bosToken: String
    let eosToken: String

    /// Turn-ending spellings the engine looks for in a template.
    static let turnEndSpellings = [
        "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>",
    ]

    /// Parses `source` and renders a test conversation (system, user, assistant, user), so a
    /// template that does not parse, raises, or passes a bound fails here, at load time.
    public init(source: String, origin: String, tokenizer: Tokenizer, limits: JinjaLimits = JinjaLimits())
        throws(ChatTemplateError)
    {
        do {
            self.template = try JinjaTemplate(source, limits: limits)
        } catch {
            throw .invalidTemplate(origin: origin, error)
        }
        self.origin = origin
        self.source = source
        self.bosToken = tokenizer.bosID.flatMap { tokenizer.tokenText($0) } ?? ""
        self.eosToken = tokenizer.eosID.flatMap { tokenizer.tokenText($0) } ?? ""
        var stops = Set<Int32>()
        for spelling in Self.turnEndSpellings where source.contains(spelling) {
            if let id = tokenizer.tokenID(spelledAs: spelling) { stops.insert(id) }
        }
        if source.contains("eos_token"), let eos = tokenizer.eosID { stops.insert(eos) }
        self.endOfGenerationIDs = stops
        let probe = [
            ChatMessage(role: .system, content: "You are a test."), ChatMessage(role: .user, content: "Hello"),
            ChatMessage(role: .assistant, content: "Hi."), ChatMessage(role: .user, content: "Bye"),
        ]
        do {
            _ = try template.render(context(probe, addGenerationPrompt: true), now: JinjaTime(Date()))
        } catch {
            throw .testRenderFailed(origin: origin, error)
        }
    }

    /// The template for a model: the override when given (a built-in name such as `chatml`,
    /// or Jinja text), else the model's own; nil when there is neither.
    public static func resolve(override: String?, modelTemplate: String?, tokenizer: Tokenizer)
        throws(ChatTemplateError)
        -> ChatTemplate?
    {
        if let override, !override.allSatisfy(\.isWhitespace) {
            if let builtIn = builtIns[override] {
                return try ChatTemplate(source: builtIn, origin: "built-in \(override)", tokenizer: tokenizer)
            }
            guard override.contains("{{") || override.contains("{%") else {
                throw .unknownBuiltIn(override, known: builtIns.keys.sorted())
            }
            return try ChatTemplate(source: override, origin: "--chat-template", tokenizer: tokenizer)
        }
        guard let modelTemplate, !modelTemplate.allSatisfy(\.isWhitespace) else { return nil }
        return try ChatTemplate(source: modelTemplate, origin: "tokenizer.chat_template", tokenizer: tokenizer)
    }

    func context(
        _ messages: [ChatMessage], addGenerationPrompt: Bool, tools: [ToolDefinition] = [], arguments: String? = nil
    ) -> [String: JinjaValue] {
        var context: [String: JinjaValue] = [:]
        // Template variables first (`chat_template_kwargs`: `enable_thinking`, …); the
        // conversation's own names below always win.
        if let arguments, case .dict(let pairs)? = JinjaValue(json: arguments) {
            for (key, value) in pairs { context[key] = value }
        }
        context["messages"] = .list(messages.map(Self.value(of:)))
        context["add_generation_prompt"] = .bool(addGenerationPrompt)
        context["bos_token"] = .string(bosToken, origin: .template)
        context["eos_token"] = .string(eosToken, origin: .template)
        // Without tools the name stays undefined, as in llama.cpp's renderer (not none).
        context["tools"] = tools.isEmpty ? nil : JinjaValue.list(tools.map(Self.value(of:)))
        return context
    }

    /// A message as Hugging Face's templates read it: `role`, `content`, and for an assistant's
    /// calls `tool_calls[].function.{name, arguments}` with the arguments as an object (templates
    /// write them with `tojson`), for a tool's result `tool_call_id`, and `reasoning_content`.
    static func value(of message: ChatMessage) -> JinjaValue {
        var pairs: [(key: String, value: JinjaValue)] = [
            ("role", .string(message.role.rawValue, origin: .data)),
            ("content", .string(message.content, origin: .data)),
        ]
        if let calls = message.toolCalls, !calls.isEmpty {
            pairs.append(
                (
                    "tool_calls",
                    .list(
                        calls.map { call in
                            .dict([
                                ("id", .string(call.id, origin: .data)), ("type", .string("function", origin: .data)),
                                (
                                    "function",
                                    .dict([
                                        ("name", .string(call.name, origin: .data)),
                                        (
                                            "arguments",
                                            JinjaValue(json: call.arguments) ?? .string(call.arguments, origin: .data)
                                        ),
                                    ])
                                ),
                            ])
                        })
                ))
        }
        if let id = message.toolCallID { pairs.append(("tool_call_id", .string(id, origin: .data))) }
        if let reasoning = message.reasoning { pairs.append(("reasoning_content", .string(reasoning, origin: .data))) }
        return .dict(pairs)
    }

    /// A tool as templates read `tools`: `{"type": "function", "function": {name, description,
    /// parameters}}`.
    static func value(of tool: ToolDefinition) -> JinjaValue {
        var function: [(key: String, value: JinjaValue)] = [("name", .string(tool.name, origin: .data))]
        if let description = tool.description { function.append(("description", .string(description, origin: .data))) }
        let parameters =
            tool.parameters.flatMap { JinjaValue(json: $0) }
            ?? .dict([("type", .string("object", origin: .data)), ("properties", .dict([]))])
        function.append(("parameters", parameters))
        return .dict([("type", .string("function", origin: .data)), ("function", .dict(function))])
    }

    /// Whether the template renders tools itself (its source reads `tools`); otherwise a caller
    /// describes them in the system message and writes calls and results as text.
    public var rendersTools: Bool {
        source.contains("tools") && source.contains("tool_call")
    }

    /// The prompt for `messages`. With `addGenerationPrompt`, it ends with the opening of an
    /// assistant turn. Throws when the template raises (say, roles that do not alternate) or
    /// passes a bound.
    /// `tools` are passed as the template's `tools` variable; `arguments` (a JSON object's text,
    /// `chat_template_kwargs`) sets further variables such as `enable_thinking`. `now` is the
    /// time `strftime_now` formats, in UTC (gpt-oss's template writes the current date).
    public func render(
        _ messages: [ChatMessage], tools: [ToolDefinition] = [], arguments: String? = nil,
        addGenerationPrompt: Bool = true, now: Date = Date()
    ) throws(ChatTemplateError) -> [PromptPiece] {
        let output: JinjaString
        do {
            output = try template.render(
                context(messages, addGenerationPrompt: addGenerationPrompt, tools: tools, arguments: arguments),
                now: JinjaTime(now))
        } catch {
            throw .renderFailed(origin: origin, error)
        }
        return output.segments.map { $0.origin == .template ? .template($0.text) : .text($0.text) }
    }

    /// The rendered prompt as text; for display and debugging.
    public func renderText(
        _ messages: [ChatMessage], tools: [ToolDefinition] = [], arguments: String? = nil,
        addGenerationPrompt: Bool = true, now: Date = Date()
    ) throws(ChatTemplateError) -> String {
        try render(messages, tools: tools, arguments: arguments, addGenerationPrompt: addGenerationPrompt, now: now).map
        {
            piece in
            switch piece {
            case .text(let text), .template(let text): return text
            case .special: return ""
            }
        }.joined()
    }
}
