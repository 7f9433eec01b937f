import Engine

/// `POST /v1/responses`, read from its JSON object field by field: every error names its field.
package struct ResponsesRequest: Sendable {
    static let metadataMaxPairs = 16
    static let metadataMaxKeyLength = 64
    static let metadataMaxValueLength = 512

    var model: String
    var input: [ResponseItem]
    /// `input` was one string, not a list of items (errors about it name `input`).
    var inputIsText = false
    var instructions: String?
    var maxOutputTokens: Int?
    /// As written (echoed back exactly); the options carry them as the engine's floats.
    var temperature: Double?
    var topP: Double?
    var store: Bool
    var stream: Bool
    var background: Bool
    var metadata: [String: String]
    /// `disabled` (overflow is a 400) or `auto` (the oldest items are dropped until it fits).
    var truncation: String
    var previousResponseID: String?
    /// `conversation`: its id, given as a string or as `{"id": …}`.
    var conversationID: String?
    var options: GenerationOptionsBody
    /// `text` echoed on the response object.
    var text = ResponseObject.TextFormat()
    var admission: AdmissionFields
    /// The `cache_salt` extension (see `CacheSalt`); refused with a conversation (a session).
    var cacheSalt: String?
    /// Function `tools` (flat shape), `tool_choice`, `parallel_tool_calls`; nil without tools.
    var tools: ToolUse?
    /// `tools` and `tool_choice` as given, echoed on the response object.
    var toolsEcho: [OpenAIJSON] = []
    var toolChoiceEcho: OpenAIJSON = .string("none")
    /// The `reasoning_budget` extension (`ReasoningBudgetField`); refused with a conversation.
    var reasoningBudget: Int?
    /// `include: ["message.output_text.logprobs"]` (or `top_logprobs` above 0): the answer's
    /// tokens' log-probabilities with `top_logprobs` alternatives each.
    var logprobs: LogprobAsk?

    package init(_ f: OpenAIFields) throws(OpenAIError) {
        try ResponsesParameterPolicy.check(f)
        guard let model = try f.string("model") else {
            throw .invalid("you must provide a model parameter", param: "model", code: .missingRequiredParameter)
        }
        self.model = model
        instructions = try f.string("instructions")
        maxOutputTokens = try f.int("max_output_tokens")
        temperature = try f.float("temperature").map { _ in f["temperature"]!.number! }
        topP = try f.float("top_p").map { _ in f["top_p"]!.number! }
        store = try f.bool("store") ?? true
        stream = try f.bool("stream") ?? false
        background = try f.bool("background") ?? false
        if background, !store {
            throw .invalid("background responses must be stored: background requires store=true", param: "background")
        }
        truncation = try f.string("truncation") ?? "disabled"
        guard ["disabled", "auto"].contains(truncation) else {
            throw .invalid("truncation must be disabled or auto, got '\(truncation)'", param: "truncation")
        }
        previousResponseID = try f.id("previous_response_id")
        conversationID = try Self.conversation(f)
        if conversationID != nil, previousResponseID != nil {
            throw .invalid(
                "conversation and previous_response_id cannot be used together", param: "previous_response_id")
        }
        metadata = try Self.metadata(f)
        let format = try Self.checkText(f)
        if let given = try f.object("text")?.object("format") {
            text.format = .init(
                type: try given.string("type") ?? "text", name: try given.string("name"), schema: given["schema"],
                strict: try given.bool("strict"), description: try given.string("description"))
        }
        input = try Self.input(f)
        if case .string = f["input"] { inputIsText = true }

        var o = try OpenAIGenerationParameters.sampling(f)
        o.maxTokens = maxOutputTokens
        o.format = format
        options = o
        admission = try OpenAIGenerationParameters.admission(f)
        cacheSalt = try CacheSalt.read(f)
        if cacheSalt != nil, conversationID != nil {
            throw .invalid(CacheSalt.refusedForSessions, param: CacheSalt.field)
        }
        tools = try OpenAIToolsRequest.read(f, flat: true)
        if tools != nil {
            if case .array(let given)? = f["tools"] { toolsEcho = given }
            toolChoiceEcho = f["tool_choice"].flatMap { $0.isNull ? nil : $0 } ?? .string("auto")
        } else if let choice = f["tool_choice"], !choice.isNull {
            toolChoiceEcho = choice
        }
        parallelToolCalls = try f.bool("parallel_tool_calls") ?? (tools != nil)
        reasoningBudget = try ReasoningBudgetField.read(f)
        logprobs = try Self.logprobs(f)
        if conversationID != nil, logprobs != nil {
            throw .unsupported(
                "log-probabilities are given for responses without a conversation", param: "include")
        }
        if conversationID != nil, reasoningBudget != nil {
            throw .unsupported(
                "reasoning_budget applies to responses without a conversation", param: ReasoningBudgetField.name)
        }
    }

    /// `parallel_tool_calls` as echoed (false without tools unless given).
    var parallelToolCalls = false

    /// `conversation`: `"conv_…"` or `{"id": "conv_…"}`.
    static func conversation(_ f: OpenAIFields) throws(OpenAIError) -> String? {
        guard let raw = f["conversation"] else { return nil }
        switch raw {
        case .string: return try f.id("conversation")
        case .object(let o):
            guard let id = try OpenAIFields(o, path: "conversation").id("id") else {
                throw .invalid(
                    "conversation.id is required", param: "conversation.id", code: .missingRequiredParameter)
            }
            return id
        default: throw f.typeError("conversation", "a string or an object with an id", raw)
        }
    }

    /// The field holding input item `i`'s text, as a request names it.
    func inputField(_ i: Int) -> String { inputIsText ? "input" : "input[\(i)].content" }

    /// `input`: a string (one user message) or a list of message items.
    static func input(_ f: OpenAIFields) throws(OpenAIError) -> [ResponseItem] {
        guard let raw = f["input"] else {
            throw .invalid("input is required", param: "input", code: .missingRequiredParameter)
        }
        switch raw {
        case .string(let s):
            guard !s.isEmpty else { throw .invalid("input must not be empty", param: "input") }
            return [.input(role: "user", text: s)]
        case .array(let items):
            guard !items.isEmpty else { throw .invalid("input must not be an empty list", param: "input") }
            var out: [ResponseItem] = []
            for (i, item) in items.enumerated() { out.append(try inputItem(item, path: "input[\(i)]")) }
            return out
        default:
            throw f.typeError("input", "a string or a list of message items", raw)
        }
    }

    /// One input item: a message, a `function_call` the model made earlier or a
    /// `function_call_output` answering one.
    static func inputItem(_ item: OpenAIJSON, path: String) throws(OpenAIError) -> ResponseItem {
        if case .object(let o) = item, o["type"] == .string("reasoning") {
            return try reasoningItem(OpenAIFields(o, path: path))
        }
        guard case .object(let o) = item, case .string(let type)? = o["type"],
            type == "function_call" || type == "function_call_output"
        else { return try message(item, path: path) }
        let m = OpenAIFields(o, path: path)
        let known =
            type == "function_call"
            ? ["type", "id", "status", "call_id", "name", "arguments"] : ["type", "id", "status", "call_id", "output"]
        if let unknown = o.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalid(
                "Unknown parameter: '\(m.name(unknown))'.", param: m.name(unknown), code: .unknownParameter)
        }
        func required(_ key: String) throws(OpenAIError) -> String {
            guard let value = try m.string(key) else {
                throw .invalid("\(m.name(key)) is required", param: m.name(key), code: .missingRequiredParameter)
            }
            return value
        }
        let callID = try required("call_id")
        guard !callID.isEmpty else {
            throw .invalid("\(m.name("call_id")) must not be empty", param: m.name("call_id"))
        }
        if type == "function_call_output" {
            return .functionCallOutput(callID: callID, output: try toolOutput(m))
        }
        let name = try required("name")
        guard OpenAIToolsRequest.validName(name) else {
            throw .invalid(
                "\(m.name("name")) must be 1 to 64 letters, digits, '_' or '-', got '\(name.prefix(80))'",
                param: m.name("name"))
        }
        let arguments = try required("arguments")
        return .functionCall(ToolCall(id: callID, name: name, arguments: arguments))
    }

    /// A `function_call_output`'s `output`: a string, or a list of `input_text` parts (joined).
    static func toolOutput(_ m: OpenAIFields) throws(OpenAIError) -> String {
        let field = m.name("output")
        switch m["output"] {
        case .string(let s)?:
            return s
        case .array(let parts)?:
            var out = ""
            for (i, part) in parts.enumerated() {
                let path = "\(field)[\(i)]"
                guard case .object(let o) = part else {
                    throw .invalid("\(path) must be an object", param: path, code: .invalidType)
                }
                let p = OpenAIFields(o, path: path)
                guard try p.string("type") == "input_text" else {
                    throw .unsupported("\(path).type: only input_text parts are supported", param: p.name("type"))
                }
                guard let text = try p.string("text") else {
                    throw .invalid("\(path).text is required", param: p.name("text"), code: .missingRequiredParameter)
                }
                out += text
            }
            return out
        case nil, .null?:
            throw .invalid("\(field) is required", param: field, code: .missingRequiredParameter)
        case let other?:
            throw m.typeError("output", "a string or a list of input_text parts", other)
        }
    }

    /// Each `function_call_output` in `input` answers a `function_call` before it in `input`
    /// (calls of earlier turns are checked once the chain is read: `ResponsesRoutes.prepare`).
    static func checkToolOutputs(_ items: [ResponseItem], earlier: Set<String> = []) throws(OpenAIError) {
        var calls = earlier
        for (i, item) in items.enumerated() {
            if let call = item.call { calls.insert(call.id) }
            if item.type == "function_call_output", let id = item.callID, !calls.contains(id) {
                throw .invalid(
                    "input[\(i)].call_id '\(id.prefix(80))' answers no function_call of an earlier item",
                    param: "input[\(i)].call_id")
            }
        }
    }

    /// One message item: `{"type"?: "message", "role", "content"}` with string content or text parts.
    static func message(_ item: OpenAIJSON, path: String) throws(OpenAIError) -> ResponseItem {
        guard case .object(let o) = item else {
            throw .invalid("\(path) must be an object, got \(item.typeName)", param: path, code: .invalidType)
        }
        let m = OpenAIFields(o, path: path)
        if let unknown = o.keys.sorted().first(where: { !["type", "role", "content", "id", "status"].contains($0) }) {
            throw .invalid(
                "Unknown parameter: '\(m.name(unknown))'.", param: m.name(unknown), code: .unknownParameter)
        }
        let type = try m.string("type") ?? "message"
        guard type == "message" else {
            throw .unsupported(
                "\(path).type '\(type)': only message items are supported", param: m.name("type"))
        }
        guard let role = try m.string("role") else {
            throw .invalid("\(path).role is required", param: m.name("role"), code: .missingRequiredParameter)
        }
        guard ["user", "assistant", "system", "developer"].contains(role) else {
            throw .invalid(
                "\(path).role must be user, assistant, system or developer, got '\(role)'", param: m.name("role"))
        }
        guard let content = m["content"] else {
            throw .invalid("\(path).content is required", param: m.name("content"), code: .missingRequiredParameter)
        }
        let text: String
        switch content {
        case .string(let s):
            text = s
        case .array(let parts):
            var out = ""
            for (i, part) in parts.enumerated() {
                let partPath = "\(path).content[\(i)]"
                guard case .object(let po) = part else {
                    throw .invalid("\(partPath) must be an object", param: partPath, code: .invalidType)
                }
                let p = OpenAIFields(po, path: partPath)
                let partType = try p.string("type") ?? ""
                guard ["input_text", "output_text", "text"].contains(partType) else {
                    throw .unsupported(
                        "\(partPath).type '\(partType)': only text content parts are supported",
                        param: p.name("type"))
                }
                guard let t = try p.string("text") else {
                    throw .invalid(
                        "\(partPath).text is required", param: p.name("text"), code: .missingRequiredParameter)
                }
                out += t
            }
            text = out
        default:
            throw .invalid(
                "\(path).content must be a string or a list of text parts, got \(content.typeName)",
                param: m.name("content"), code: .invalidType)
        }
        return .input(role: role, text: text)
    }

    /// `metadata`: at most 16 string values, keys up to 64 characters, values up to 512.
    static func metadata(_ f: OpenAIFields) throws(OpenAIError) -> [String: String] {
        guard let m = try f.object("metadata") else { return [:] }
        guard m.values.count <= metadataMaxPairs else {
            throw .invalid("metadata may hold at most \(metadataMaxPairs) pairs", param: "metadata")
        }
        var out: [String: String] = [:]
        for (key, value) in m.values {
            guard key.count <= metadataMaxKeyLength else {
                throw .invalid("metadata keys may be at most \(metadataMaxKeyLength) characters", param: "metadata")
            }
            guard case .string(let s) = value else { throw m.typeError(key, "a string", value) }
            guard s.count <= metadataMaxValueLength else {
                throw .invalid(
                    "metadata values may be at most \(metadataMaxValueLength) characters", param: m.name(key))
            }
            out[key] = s
        }
        return out
    }

    /// `text`: its `format` is structured output (`json_schema` with `name`, `schema`, `strict`,
    /// or `json_object`), compiled like the chat route's `response_format`.
    static func checkText(_ f: OpenAIFields) throws(OpenAIError) -> FormatField? {
        guard let text = try f.object("text") else { return nil }
        if let unknown = text.values.keys.sorted().first(where: { !["format", "verbosity"].contains($0) }) {
            throw .invalid(
                "Unknown parameter: '\(text.name(unknown))'.", param: text.name(unknown), code: .unknownParameter)
        }
        if let verbosity = try text.string("verbosity"), verbosity != "medium" {
            throw .unsupported("text.verbosity '\(verbosity)' is not supported", param: "text.verbosity")
        }
        guard let format = try text.object("format") else { return nil }
        let known = ["type", "name", "schema", "strict", "description"]
        if let unknown = format.values.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalid(
                "Unknown parameter: '\(format.name(unknown))'.", param: format.name(unknown), code: .unknownParameter)
        }
        let type = try format.string("type") ?? ""
        switch type {
        case "text":
            return nil
        case "json_object":
            return FormatField(kind: .jsonObject, param: "text.format")
        case "json_schema":
            _ = try format.string("name")
            _ = try format.bool("strict")
            _ = try format.string("description")
            guard let schema = format.orderedValue("schema"), format["schema"] != nil else {
                throw .invalid(
                    "text.format.schema is required", param: "text.format.schema", code: .missingRequiredParameter)
            }
            return FormatField(
                kind: .jsonSchema, schema: schema, param: "text.format.schema")
        default:
            throw .invalid(
                "text.format.type must be text, json_object or json_schema, got '\(type)'", param: "text.format.type")
        }
    }
}
