import Engine
import Sessions
import StructuredOutput

/// `POST /v1/chat/completions`, read from its JSON object.
package struct OpenAIChatRequest: Sendable {
    var messages: [ChatMessage]
    var parameters: OpenAIGenerationParameters
    /// The `session_id` extension: the last user message is a new turn of that session.
    var sessionID: String?
    /// With `session_id`: `queue`, `reject` or `replace` for this request (the session's own otherwise).
    var onBusy: BusyPolicy?
    /// `tools`, `tool_choice`, `parallel_tool_calls`; nil without tools.
    var tools: ToolUse?
    /// `chat_template_kwargs`: further template variables, as a JSON object's text.
    var templateArguments: String?
    /// The `reasoning_budget` extension: at most this many reasoning tokens (`ReasoningBudgetField`).
    var reasoningBudget: Int?

    package init(_ f: OpenAIFields) throws(OpenAIError) {
        try OpenAIParameterPolicy.chat.check(f)
        parameters = try OpenAIGenerationParameters(f, maxTokensKeys: ["max_completion_tokens", "max_tokens"])
        parameters.logprobs = try Self.logprobs(f)
        sessionID = try f.id("session_id")
        onBusy = try f.choice("on_busy")
        if onBusy != nil, sessionID == nil {
            throw .invalid("on_busy applies only with session_id", param: "on_busy")
        }
        if parameters.cacheSalt != nil, sessionID != nil {
            throw .invalid(CacheSalt.refusedForSessions, param: CacheSalt.field)
        }
        guard let raw = f["messages"] else {
            throw .invalid("messages is required", param: "messages", code: .missingRequiredParameter)
        }
        guard case .array(let items) = raw else { throw f.typeError("messages", "an array", raw) }
        guard !items.isEmpty else { throw .invalid("messages must not be empty", param: "messages") }
        messages = []
        for (i, item) in items.enumerated() {
            messages.append(try Self.message(item, path: "messages[\(i)]"))
        }
        // With a session, tool messages answer calls of its transcript (checked when the turn is).
        if sessionID == nil { try Self.checkToolResults(messages) }
        tools = try OpenAIToolsRequest.read(f)
        if let kwargs = try f.object("chat_template_kwargs") {
            templateArguments =
                (f.orderedValue("chat_template_kwargs") ?? JSONValue(.object(kwargs.values))).compactText
        }
        reasoningBudget = try ReasoningBudgetField.read(f)
        if sessionID != nil, templateArguments != nil || reasoningBudget != nil {
            throw .unsupported(
                "chat_template_kwargs and reasoning_budget apply to stateless requests; a session's turns are rendered alike",
                param: templateArguments != nil ? "chat_template_kwargs" : ReasoningBudgetField.name)
        }
    }

    /// Each tool message answers a call an earlier assistant message made (`tool_call_id`).
    static func checkToolResults(_ messages: [ChatMessage]) throws(OpenAIError) {
        var calls = Set<String>()
        for (i, m) in messages.enumerated() {
            for call in m.toolCalls ?? [] { calls.insert(call.id) }
            if m.role == .tool, let id = m.toolCallID, !calls.contains(id) {
                throw .invalid(
                    "messages[\(i)].tool_call_id '\(id.prefix(80))' answers no tool call of an earlier assistant message",
                    param: "messages[\(i)].tool_call_id")
            }
        }
    }

    /// `logprobs` (a boolean) with `top_logprobs` (0–20, only with `logprobs: true`, as OpenAI
    /// answers) and `logprobs_mode`.
    static func logprobs(_ f: OpenAIFields) throws(OpenAIError) -> LogprobAsk? {
        let asked = try f.bool("logprobs") ?? false
        let top = try LogprobAsk.top(f, "top_logprobs")
        let mode = try LogprobAsk.mode(f)
        guard asked else {
            if let top, top > 0 {
                throw .invalid("top_logprobs requires logprobs to be true", param: "top_logprobs")
            }
            if mode != nil { throw .invalid("logprobs_mode requires logprobs", param: "logprobs_mode") }
            return nil
        }
        return LogprobAsk(top: top ?? 0, distribution: mode ?? .processed)
    }

    /// The text of the last user message: with `session_id`, the new turn.
    var lastUserMessage: String? { messages.last(where: { $0.role == .user })?.content }

    /// With `session_id`, what the new turn gives: the tool messages after the last assistant
    /// message (results of the session's calls, with their index in `messages`) and the last
    /// user message after it (or, when there is none and no results, the last user message).
    var sessionTurnInput: (prompt: String?, results: [(index: Int, message: ChatMessage)]) {
        let start = (messages.lastIndex { $0.role == .assistant }).map { $0 + 1 } ?? 0
        let tail = messages.indices[start...]
        let results = tail.filter { messages[$0].role == .tool }.map { ($0, messages[$0]) }
        let prompt = tail.last { messages[$0].role == .user }.map { messages[$0].content }
        return (prompt ?? (results.isEmpty ? lastUserMessage : ""), results)
    }

    /// One message: system/developer, user or assistant, with string content or text parts.
    static func message(_ item: OpenAIJSON, path: String) throws(OpenAIError) -> ChatMessage {
        guard case .object(let o) = item else {
            throw .invalid("\(path) must be an object, got \(item.typeName)", param: path, code: .invalidType)
        }
        let m = OpenAIFields(o, path: path)
        guard let roleName = try m.string("role") else {
            throw .invalid("\(path).role is required", param: m.name("role"), code: .missingRequiredParameter)
        }
        let role: ChatMessage.Role
        switch roleName {
        case "system", "developer": role = .system
        case "user": role = .user
        case "assistant": role = .assistant
        case "tool": role = .tool
        case "function":
            throw .unsupported(
                "\(path).role 'function' is deprecated: use tool messages with tool_call_id", param: m.name("role"))
        default:
            throw .invalid(
                "\(path).role must be system, developer, user, assistant or tool, got '\(roleName)'",
                param: m.name("role"))
        }
        var toolCalls: [ToolCall]?
        if let raw = m["tool_calls"], raw != .array([]) {
            guard role == .assistant else {
                throw .invalid("\(path).tool_calls: only assistant messages make calls", param: m.name("tool_calls"))
            }
            toolCalls = try calls(raw, path: m.name("tool_calls"))
        }
        var toolCallID: String?
        if role == .tool {
            guard let id = try m.id("tool_call_id") else {
                throw .invalid(
                    "\(path).tool_call_id is required in a tool message", param: m.name("tool_call_id"),
                    code: .missingRequiredParameter)
            }
            toolCallID = id
        }
        let reasoning = role == .assistant ? try m.string("reasoning_content") : nil
        guard let content = m["content"] else {
            // An assistant message that only calls has no content (null), as OpenAI sends it.
            if toolCalls != nil {
                return ChatMessage(role: role, content: "", toolCalls: toolCalls, reasoning: reasoning)
            }
            throw .invalid("\(path).content is required", param: m.name("content"), code: .missingRequiredParameter)
        }
        return ChatMessage(
            role: role, content: try text(of: content, path: m.name("content")), toolCalls: toolCalls,
            toolCallID: toolCallID, reasoning: reasoning)
    }

    /// An assistant message's `tool_calls`: `{id, type: "function", function: {name, arguments}}`,
    /// `arguments` a string holding a JSON object, as OpenAI returns them.
    static func calls(_ raw: OpenAIJSON, path: String) throws(OpenAIError) -> [ToolCall] {
        guard case .array(let items) = raw else {
            throw .invalid("\(path) must be an array, got \(raw.typeName)", param: path, code: .invalidType)
        }
        var out: [ToolCall] = []
        for (i, item) in items.enumerated() {
            let p = "\(path)[\(i)]"
            guard case .object(let o) = item else {
                throw .invalid("\(p) must be an object, got \(item.typeName)", param: p, code: .invalidType)
            }
            let c = OpenAIFields(o, path: p)
            guard let id = try c.id("id") else {
                throw .invalid("\(p).id is required", param: c.name("id"), code: .missingRequiredParameter)
            }
            if let type = try c.string("type"), type != "function" {
                throw .unsupported("\(p).type '\(type)': only function calls are supported", param: c.name("type"))
            }
            guard let function = try c.object("function"), let name = try function.string("name") else {
                throw .invalid(
                    "\(p).function.name is required", param: "\(p).function.name", code: .missingRequiredParameter)
            }
            let arguments = try function.string("arguments") ?? "{}"
            guard case .object? = try? JSONParser.parse(arguments) else {
                throw .invalid(
                    "\(p).function.arguments must be a string holding a JSON object", param: "\(p).function.arguments")
            }
            out.append(ToolCall(id: id, name: name, arguments: arguments))
        }
        return out
    }

    /// Content as a string, or an array of `{"type":"text","text":…}` parts joined as they are.
    static func text(of content: OpenAIJSON, path: String) throws(OpenAIError) -> String {
        switch content {
        case .string(let s):
            return s
        case .array(let parts):
            var out = ""
            for (i, part) in parts.enumerated() {
                let partPath = "\(path)[\(i)]"
                guard case .object(let o) = part else {
                    throw .invalid("\(partPath) must be an object", param: partPath, code: .invalidType)
                }
                let p = OpenAIFields(o, path: partPath)
                let type = try p.string("type") ?? ""
                guard type == "text" else {
                    throw .unsupported(
                        "\(partPath).type '\(type)': only text content parts are supported", param: p.name("type"))
                }
                guard let text = try p.string("text") else {
                    throw .invalid(
                        "\(partPath).text is required", param: p.name("text"), code: .missingRequiredParameter)
                }
                out += text
            }
            return out
        default:
            throw .invalid(
                "\(path) must be a string or an array of text parts, got \(content.typeName)", param: path,
                code: .invalidType)
        }
    }
}
