import Engine
import StructuredOutput

/// A Messages request's `messages`: roles `user` and `assistant`, content a string or blocks.
/// User blocks: `text` and `tool_result` (its `content` a string or text blocks, `is_error`);
/// assistant blocks: `text`, `tool_use` and `thinking` (passed back as the message's reasoning).
/// Images, documents and server-tool blocks are refused naming the block's type. `cache_control`
/// is accepted and has no effect beyond Anthropic's own promise (prompts that start alike are
/// reused by the prefix cache anyway).
enum MessagesContent {
    static let userBlocks: Set<String> = ["text", "tool_result"]
    static let assistantBlocks: Set<String> = ["text", "tool_use", "thinking"]

    static func messages(_ f: OpenAIFields) throws(OpenAIError) -> [ChatMessage] {
        guard let raw = f["messages"] else {
            throw .invalid("messages: field required", param: "messages", code: .missingRequiredParameter)
        }
        guard case .array(let items) = raw else {
            throw .invalid("messages: must be a list", param: "messages", code: .invalidType)
        }
        guard !items.isEmpty else { throw .invalid("messages: at least one message is required", param: "messages") }
        var out: [ChatMessage] = []
        var calls = Set<String>()
        for (i, item) in items.enumerated() {
            let path = "messages.\(i)"
            guard case .object(let o) = item else {
                throw .invalid("\(path): must be an object", param: path, code: .invalidType)
            }
            let m = OpenAIFields(o, path: path)
            if let other = m.values.keys.sorted().first(where: { !["role", "content"].contains($0) }) {
                throw .invalid("\(path).\(other): unknown field", param: "\(path).\(other)", code: .unknownParameter)
            }
            let role = try m.string("role")
            guard role == "user" || role == "assistant" else {
                throw .invalid("\(path).role: must be user or assistant", param: "\(path).role")
            }
            guard let content = m["content"] else {
                throw .invalid(
                    "\(path).content: field required", param: "\(path).content", code: .missingRequiredParameter)
            }
            if role == "user" {
                out += try user(content, path: "\(path).content", calls: calls)
            } else {
                let message = try assistant(content, path: "\(path).content")
                for call in message.toolCalls ?? [] { calls.insert(call.id) }
                out.append(message)
            }
        }
        if out.last?.role == .assistant {
            throw .unsupported(
                "messages.\(items.count - 1).role: a final assistant message (a prefill to continue) is not supported; end with a user message",
                param: "messages.\(items.count - 1).role")
        }
        return out
    }

    /// A user message: its tool results as tool messages (first, as Anthropic requires them), then
    /// its text.
    static func user(_ content: OpenAIJSON, path: String, calls: Set<String>) throws(OpenAIError) -> [ChatMessage] {
        if case .string(let s) = content { return [ChatMessage(role: .user, content: s)] }
        let blocks = try list(content, path: path)
        var results: [ChatMessage] = []
        var texts: [String] = []
        for (j, raw) in blocks.enumerated() {
            let b = try block(raw, path: "\(path).\(j)")
            switch try type(b, allowed: userBlocks) {
            case "text":
                texts.append(try text(b))
            default:  // tool_result
                try keys(b, ["type", "tool_use_id", "content", "is_error", "cache_control"])
                guard let id = try b.id("tool_use_id") else {
                    throw .invalid(
                        "\(b.name("tool_use_id")): field required", param: b.name("tool_use_id"),
                        code: .missingRequiredParameter)
                }
                guard calls.contains(id) else {
                    throw .invalid(
                        "\(b.name("tool_use_id")): '\(id.prefix(80))' answers no tool_use block of an earlier assistant message",
                        param: b.name("tool_use_id"))
                }
                var result =
                    try b["content"].map { v throws(OpenAIError) in try resultText(v, path: b.name("content")) } ?? ""
                // The template knows no error flag: the model reads it in the result itself.
                if try b.bool("is_error") == true { result = "Error: " + result }
                results.append(ChatMessage(role: .tool, content: result, toolCallID: id))
            }
        }
        if !texts.isEmpty || results.isEmpty {
            results.append(ChatMessage(role: .user, content: texts.joined(separator: "\n")))
        }
        return results
    }

    /// An assistant message: text, calls (`tool_use`, whose `input` becomes the call's arguments)
    /// and reasoning (`thinking`).
    static func assistant(_ content: OpenAIJSON, path: String) throws(OpenAIError) -> ChatMessage {
        if case .string(let s) = content { return ChatMessage(role: .assistant, content: s) }
        var texts: [String] = []
        var calls: [ToolCall] = []
        var reasoning: [String] = []
        for (j, raw) in try list(content, path: path).enumerated() {
            let b = try block(raw, path: "\(path).\(j)")
            switch try type(b, allowed: assistantBlocks) {
            case "text":
                texts.append(try text(b))
            case "thinking":
                try keys(b, ["type", "thinking", "signature"])
                guard let t = try b.string("thinking") else {
                    throw .invalid("\(b.name("thinking")): field required", param: b.name("thinking"))
                }
                reasoning.append(t)
            default:  // tool_use
                try keys(b, ["type", "id", "name", "input", "cache_control"])
                guard let id = try b.id("id"), let name = try b.string("name") else {
                    throw .invalid(
                        "\(path).\(j): a tool_use block needs id and name", param: "\(path).\(j)",
                        code: .missingRequiredParameter)
                }
                guard let input = b["input"], case .object = input else {
                    throw .invalid("\(b.name("input")): must be an object", param: b.name("input"))
                }
                let arguments = (b.orderedValue("input") ?? JSONValue(input)).compactText
                calls.append(ToolCall(id: id, name: name, arguments: arguments))
            }
        }
        return ChatMessage(
            role: .assistant, content: texts.joined(separator: "\n"), toolCalls: calls.isEmpty ? nil : calls,
            reasoning: reasoning.isEmpty ? nil : reasoning.joined(separator: "\n"))
    }

    static func list(_ content: OpenAIJSON, path: String) throws(OpenAIError) -> [OpenAIJSON] {
        guard case .array(let blocks) = content else {
            throw .invalid("\(path): must be a string or a list of content blocks", param: path, code: .invalidType)
        }
        return blocks
    }

    static func block(_ raw: OpenAIJSON, path: String) throws(OpenAIError) -> OpenAIFields {
        guard case .object(let o) = raw else {
            throw .invalid("\(path): must be an object", param: path, code: .invalidType)
        }
        let b = OpenAIFields(o, path: path)
        try cacheControl(b)
        return b
    }

    /// `cache_control` where `b` has one (a block, a tool, the request itself): its shape only,
    /// `ephemeral` with `ttl` `5m` or `1h`; caching here is automatic.
    static func cacheControl(_ b: OpenAIFields) throws(OpenAIError) {
        guard let cache = try b.object("cache_control") else { return }
        let field = b.name("cache_control")
        guard try cache.string("type") == "ephemeral" else {
            throw .invalid("\(field).type: must be ephemeral", param: "\(field).type")
        }
        if let ttl = try cache.string("ttl"), !["5m", "1h"].contains(ttl) {
            throw .invalid("\(field).ttl: must be 5m or 1h", param: "\(field).ttl")
        }
    }

    /// The block's `type`, one of `allowed`; any other is refused naming it.
    static func type(_ b: OpenAIFields, allowed: Set<String>) throws(OpenAIError) -> String {
        guard let type = try b.string("type") else {
            throw .invalid("\(b.name("type")): field required", param: b.name("type"), code: .missingRequiredParameter)
        }
        guard allowed.contains(type) else {
            throw .unsupported(
                "\(b.name("type")): '\(type.prefix(40))' blocks are not supported here; supported: \(allowed.sorted().joined(separator: ", "))",
                param: b.name("type"))
        }
        return type
    }

    /// A block holds only `allowed` keys.
    static func keys(_ b: OpenAIFields, _ allowed: Set<String>) throws(OpenAIError) {
        if let other = b.values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw .invalid("\(b.name(other)): unknown field", param: b.name(other), code: .unknownParameter)
        }
    }

    /// A `text` block's text (citations refused: this server quotes no documents).
    static func text(_ b: OpenAIFields) throws(OpenAIError) -> String {
        try keys(b, ["type", "text", "cache_control", "citations"])
        if let c = b["citations"], c != .array([]) {
            throw .unsupported("\(b.name("citations")): citations are not supported", param: b.name("citations"))
        }
        guard let text = try b.string("text") else {
            throw .invalid("\(b.name("text")): field required", param: b.name("text"), code: .missingRequiredParameter)
        }
        return text
    }

    /// A `tool_result`'s content: a string or text blocks.
    static func resultText(_ content: OpenAIJSON, path: String) throws(OpenAIError) -> String {
        if case .string(let s) = content { return s }
        var texts: [String] = []
        for (k, raw) in try list(content, path: path).enumerated() {
            let b = try block(raw, path: "\(path).\(k)")
            _ = try type(b, allowed: ["text"])
            texts.append(try text(b))
        }
        return texts.joined(separator: "\n")
    }
}
