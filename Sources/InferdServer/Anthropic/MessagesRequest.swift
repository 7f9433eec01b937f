import Engine
import Sessions
import StructuredOutput

/// `POST /v1/messages` (and `/v1/messages/count_tokens`), read from its JSON object into the
/// server's own terms: a conversation of `ChatMessage`s, native generation options, a `ToolUse`.
/// Every field Anthropic defines is either honoured or refused with a 400 naming it; unknown
/// fields are refused too. Paths are Anthropic's (`messages.0.content.1.type`).
struct MessagesRequest: Sendable {
    enum Thinking: Sendable, Equatable {
        case enabled(budget: Int)
        case disabled
    }

    var model: String
    /// The conversation: `system` first when given, then the messages (tool results as tool messages).
    var messages: [ChatMessage]
    var maxTokens: Int?
    var stream: Bool
    /// Sampling and stop options in the native terms (validated by the shared rules).
    var options: GenerationOptionsBody
    var tools: ToolUse?
    var thinking: Thinking?
    /// `metadata.user_id` (logged, never sent to the model).
    var userID: String?
    /// inferd's extensions: run the request as a turn of this session (`SessionTurns`).
    var sessionID: String?
    var onBusy: BusyPolicy?

    static let createFields: Set<String> = [
        "model", "max_tokens", "messages", "system", "stop_sequences", "temperature", "top_p", "top_k", "stream",
        "metadata", "tools", "tool_choice", "thinking", "service_tier", "output_config", "cache_control",
        "session_id", "on_busy",
    ]
    static let countFields: Set<String> = [
        "model", "messages", "system", "tools", "tool_choice", "thinking", "output_config", "cache_control",
    ]
    /// Fields of Anthropic's API this server does not offer: refused by name, not ignored.
    static let refusedFields: [String: String] = [
        "container": "code execution containers are not supported",
        "mcp_servers": "MCP servers are not supported",
        "context_management": "context management is not supported",
        "diagnostics": "diagnostics are not supported",
        "inference_geo": "this server runs where it is deployed; it cannot honour a requested region",
        "speed": "speed modes are not supported",
        "user_profile_id": "user profiles are not supported",
        "workspace_id": "workspaces are not supported",
    ]

    /// `count`: the body of `count_tokens` (no `max_tokens`, no sampling).
    init(_ f: OpenAIFields, count: Bool = false) throws(OpenAIError) {
        let allowed = count ? Self.countFields : Self.createFields
        for key in f.values.keys.sorted() where !allowed.contains(key) {
            if let why = Self.refusedFields[key] { throw .unsupported("\(key): \(why)", param: key) }
            throw .invalid(
                "\(key): unknown field; accepted: \(allowed.sorted().joined(separator: ", "))", param: key,
                code: .unknownParameter)
        }
        guard let model = try f.string("model") else {
            throw .invalid("model: field required", param: "model", code: .missingRequiredParameter)
        }
        self.model = model
        stream = try f.bool("stream") ?? false
        options = GenerationOptionsBody()
        if !count {
            guard let n = try f.int("max_tokens") else {
                throw .invalid("max_tokens: field required", param: "max_tokens", code: .missingRequiredParameter)
            }
            guard n >= 1 else { throw .invalid("max_tokens: must be at least 1", param: "max_tokens") }
            maxTokens = n
            options.maxTokens = n
            options.temperature = try f.float("temperature")
            if let t = options.temperature, !(0...1).contains(t) {
                throw .invalid("temperature: must be between 0 and 1", param: "temperature")
            }
            options.topP = try f.float("top_p")
            options.topK = try f.int("top_k")
            if let stops = try Self.stopSequences(f) { options.stop = StopList(stops) }
            userID = try Self.userID(f)
            if let tier = try f.string("service_tier"), !["auto", "standard_only"].contains(tier) {
                throw .invalid("service_tier: must be auto or standard_only", param: "service_tier")
            }
            sessionID = try f.id("session_id")
            onBusy = try f.choice("on_busy")
            if onBusy != nil, sessionID == nil {
                throw .invalid("on_busy: applies only with session_id", param: "on_busy")
            }
        }
        try MessagesContent.cacheControl(f)
        options.format = try Self.outputFormat(f)
        var conversation: [ChatMessage] = []
        if let system = try Self.system(f) { conversation.append(ChatMessage(role: .system, content: system)) }
        conversation += try MessagesContent.messages(f)
        messages = conversation
        tools = try MessagesTools.read(f)
        thinking = try Self.thinking(f, maxTokens: maxTokens)
        if sessionID != nil, thinking != nil {
            throw .unsupported(
                "thinking: applies to stateless requests; a session's turns are rendered alike", param: "thinking")
        }
    }

    /// `system`: a string or a list of text blocks (joined by a blank line).
    static func system(_ f: OpenAIFields) throws(OpenAIError) -> String? {
        guard let raw = f["system"] else { return nil }
        switch raw {
        case .string(let s): return s
        case .array(let blocks):
            var texts: [String] = []
            for (i, block) in blocks.enumerated() {
                let b = try MessagesContent.block(block, path: "system.\(i)")
                guard try b.string("type") == "text" else {
                    throw .invalid(
                        "system.\(i).type: only text blocks may form the system prompt", param: "system.\(i).type")
                }
                texts.append(try MessagesContent.text(b))
            }
            return texts.joined(separator: "\n\n")
        default:
            throw .invalid("system: must be a string or a list of text blocks", param: "system", code: .invalidType)
        }
    }

    /// `stop_sequences`: a list of non-empty strings.
    static func stopSequences(_ f: OpenAIFields) throws(OpenAIError) -> [String]? {
        guard let raw = f["stop_sequences"] else { return nil }
        guard case .array(let items) = raw else {
            throw .invalid("stop_sequences: must be a list of strings", param: "stop_sequences", code: .invalidType)
        }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item, !s.isEmpty else {
                throw .invalid("stop_sequences.\(i): must be a non-empty string", param: "stop_sequences.\(i)")
            }
            out.append(s)
        }
        return out
    }

    /// `metadata`: only `user_id` (a string of at most 256 characters), as Anthropic defines it.
    static func userID(_ f: OpenAIFields) throws(OpenAIError) -> String? {
        guard let m = try f.object("metadata") else { return nil }
        if let other = m.values.keys.sorted().first(where: { $0 != "user_id" }) {
            throw .invalid("metadata.\(other): unknown field; metadata holds user_id only", param: "metadata.\(other)")
        }
        let id = try m.string("user_id")
        if let id, id.count > 256 {
            throw .invalid("metadata.user_id: at most 256 characters", param: "metadata.user_id")
        }
        return id
    }

    /// `thinking`: `{"type": "enabled", "budget_tokens": N}` (N at least 1 and below `max_tokens`)
    /// or `{"type": "disabled"}`. Whether the model can think is checked with its template.
    static func thinking(_ f: OpenAIFields, maxTokens: Int?) throws(OpenAIError) -> Thinking? {
        guard let t = try f.object("thinking") else { return nil }
        switch try t.string("type") {
        case "disabled":
            if let other = t.values.keys.sorted().first(where: { $0 != "type" }) {
                throw .invalid("thinking.\(other): unknown field", param: "thinking.\(other)")
            }
            return .disabled
        case "enabled":
            if let other = t.values.keys.sorted().first(where: { !["type", "budget_tokens"].contains($0) }) {
                throw .invalid("thinking.\(other): unknown field", param: "thinking.\(other)")
            }
            guard let budget = try t.int("budget_tokens") else {
                throw .invalid(
                    "thinking.budget_tokens: field required", param: "thinking.budget_tokens",
                    code: .missingRequiredParameter)
            }
            guard budget >= 1 else {
                throw .invalid("thinking.budget_tokens: must be at least 1", param: "thinking.budget_tokens")
            }
            if let maxTokens, budget >= maxTokens {
                throw .invalid(
                    "thinking.budget_tokens: must be less than max_tokens (\(maxTokens))",
                    param: "thinking.budget_tokens")
            }
            return .enabled(budget: budget)
        default:
            throw .invalid("thinking.type: must be enabled or disabled", param: "thinking.type")
        }
    }

    /// `output_config`: `format` `{"type": "json_schema", "schema": {…}}` is structured output,
    /// enforced by grammar as everywhere; `effort` and `task_budget` are refused (nothing here
    /// would honour them).
    static func outputFormat(_ f: OpenAIFields) throws(OpenAIError) -> FormatField? {
        guard let config = try f.object("output_config") else { return nil }
        for key in config.values.keys.sorted() where key != "format" {
            throw .unsupported("output_config.\(key): not supported", param: "output_config.\(key)")
        }
        guard let format = try config.object("format") else { return nil }
        if let other = format.values.keys.sorted().first(where: { !["type", "schema"].contains($0) }) {
            throw .invalid("output_config.format.\(other): unknown field", param: "output_config.format.\(other)")
        }
        guard try format.string("type") == "json_schema" else {
            throw .invalid("output_config.format.type: must be json_schema", param: "output_config.format.type")
        }
        guard let raw = format["schema"], case .object = raw else {
            throw .invalid(
                "output_config.format.schema: a JSON Schema object is required", param: "output_config.format.schema")
        }
        return FormatField(
            kind: .jsonSchema, schema: format.orderedValue("schema") ?? JSONValue(raw),
            param: "output_config.format.schema")
    }

    /// Template variables for `thinking: disabled` on a template that thinks.
    var templateArguments: String? {
        thinking == .disabled ? #"{"enable_thinking":false}"# : nil
    }

    var reasoningBudget: Int? {
        if case .enabled(let budget) = thinking { return budget }
        return nil
    }
}
