import Engine
import StructuredOutput

/// A Messages answer as Anthropic's API returns it (`type: "message"`), the `message` of a
/// stream's `message_start`, and its parts.
struct MessageBody: Encodable, Sendable, Equatable {
    var id: String
    var model: String
    var content: [MessageBlock]
    /// `end_turn`, `max_tokens`, `stop_sequence` or `tool_use`; null in `message_start`.
    var stopReason: String?
    var stopSequence: String?
    var usage: MessagesUsage

    enum CodingKeys: String, CodingKey {
        case id, type, role, model, content, usage
        case stopReason = "stop_reason"
        case stopSequence = "stop_sequence"
    }

    /// `stop_reason` and `stop_sequence` are always present, null when unset, as Anthropic sends them.
    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode("message", forKey: .type)
        try c.encode("assistant", forKey: .role)
        try c.encode(model, forKey: .model)
        try c.encode(content, forKey: .content)
        try c.encode(stopReason, forKey: .stopReason)
        try c.encode(stopSequence, forKey: .stopSequence)
        try c.encode(usage, forKey: .usage)
    }
}

/// One content block: text, thinking, or a call.
enum MessageBlock: Encodable, Sendable, Equatable {
    case text(String)
    case thinking(String)
    /// `input` is the call's arguments, a JSON object.
    case toolUse(id: String, name: String, input: JSONValue)

    enum CodingKeys: String, CodingKey {
        case type, text, thinking, signature, id, name, input
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .text(let text):
            try c.encode("text", forKey: .type)
            try c.encode(text, forKey: .text)
        case .thinking(let thinking):
            try c.encode("thinking", forKey: .type)
            try c.encode(thinking, forKey: .thinking)
            // Anthropic signs its thinking so it can be passed back unaltered; this server keeps
            // no such secret, and takes thinking back with any signature.
            try c.encode("", forKey: .signature)
        case .toolUse(let id, let name, let input):
            try c.encode("tool_use", forKey: .type)
            try c.encode(id, forKey: .id)
            try c.encode(name, forKey: .name)
            try c.encode(input, forKey: .input)
        }
    }

    /// Anthropic's call ids are `toolu_…`; the shared tool machinery makes `call_…` ones.
    static func toolUseID(_ callID: String) -> String {
        callID.hasPrefix("call_") ? "toolu_" + callID.dropFirst("call_".count) : callID
    }
}

/// `usage`: input tokens computed for this request, those read from a kept KV cache (the prefix
/// cache or the session's), none written to a cache on request (`cache_creation_input_tokens`
/// is 0: caching here is automatic and free), and output tokens.
struct MessagesUsage: Encodable, Sendable, Equatable {
    var inputTokens: Int
    var outputTokens: Int
    var cacheReadInputTokens: Int
    var cacheCreationInputTokens = 0

    init(_ usage: GenerationUsage) {
        inputTokens = max(usage.promptTokens - usage.cachedTokens, 0)
        outputTokens = usage.completionTokens
        cacheReadInputTokens = usage.cachedTokens
    }

    init(inputTokens: Int) {
        self.inputTokens = inputTokens
        outputTokens = 0
        cacheReadInputTokens = 0
    }

    enum CodingKeys: String, CodingKey {
        case inputTokens = "input_tokens"
        case outputTokens = "output_tokens"
        case cacheReadInputTokens = "cache_read_input_tokens"
        case cacheCreationInputTokens = "cache_creation_input_tokens"
    }
}
