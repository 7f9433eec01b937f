import Engine
import Sessions

/// `POST /v1/chat/completions`, read from its JSON object.
package struct OpenAIChatRequest: Sendable {
    var messages: [ChatMessage]
    var parameters: OpenAIGenerationParameters
    /// The `session_id` extension: the last user message is a new turn of that session.
    var sessionID: String?
    /// With `session_id`: `queue`, `reject` or `replace` for this request (the session's own otherwise).
    var onBusy: BusyPolicy?

    package init(_ f: OpenAIFields) throws(OpenAIError) {
        try OpenAIParameterPolicy.chat.check(f)
        parameters = try OpenAIGenerationParameters(f, maxTokensKeys: ["max_completion_tokens", "max_tokens"])
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
    }

    /// The text of the last user message: with `session_id`, the new turn.
    var lastUserMessage: String? { messages.last(where: { $0.role == .user })?.content }

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
        case "tool", "function":
            throw .unsupported(
                "\(path).role '\(roleName)': tool and function messages are not supported", param: m.name("role"))
        default:
            throw .invalid(
                "\(path).role must be system, developer, user or assistant, got '\(roleName)'", param: m.name("role"))
        }
        if let calls = m["tool_calls"], calls != .array([]) {
            throw .unsupported("\(path).tool_calls: tool calling is not supported", param: m.name("tool_calls"))
        }
        guard let content = m["content"] else {
            throw .invalid("\(path).content is required", param: m.name("content"), code: .missingRequiredParameter)
        }
        return ChatMessage(role: role, content: try text(of: content, path: m.name("content")))
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
