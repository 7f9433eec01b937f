import Engine

/// An item of the Responses API: a message (an input item with `input_text` parts, `output_text`
/// for an assistant's, or the output message with one `output_text` part), a `function_call`
/// the model made (`call_id`, `name`, `arguments` as JSON text) or a `function_call_output`
/// answering one (`call_id`, `output`), or a thinking model's `reasoning` (its text as one
/// `reasoning_text` part, an empty `summary`: inferd does not summarise). Each type writes only
/// its own fields.
struct ResponseItem: Codable, Sendable, Equatable {
    struct Part: Codable, Sendable, Equatable {
        var type: String
        var text: String
        /// Present (empty) on `output_text` parts, as OpenAI's clients expect.
        var annotations: [String]?
        /// An `output_text` part's tokens, when `include` asked for them.
        var logprobs: [LogprobEntryBody]?

        static func output(_ text: String, logprobs: [LogprobEntryBody]? = nil) -> Part {
            Part(type: "output_text", text: text, annotations: [], logprobs: logprobs)
        }
    }

    var id: String
    /// `message`, `function_call`, `function_call_output` or `reasoning`.
    var type = "message"
    /// `in_progress`, `completed` or `incomplete`.
    var status: String
    /// A message's: `user`, `assistant`, `system` or `developer` (`assistant` for a call).
    var role: String
    var content: [Part]
    /// A call's id (`call_…`), on `function_call` and `function_call_output` items.
    var callID: String?
    var name: String?
    var arguments: String?
    var output: String?

    init(
        id: String, type: String = "message", status: String, role: String, content: [Part],
        callID: String? = nil, name: String? = nil, arguments: String? = nil, output: String? = nil
    ) {
        self.id = id
        self.type = type
        self.status = status
        self.role = role
        self.content = content
        self.callID = callID
        self.name = name
        self.arguments = arguments
        self.output = output
    }

    enum CodingKeys: String, CodingKey {
        case id, type, status, role, content, name, arguments, output, summary
        case callID = "call_id"
    }

    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        type = try c.decodeIfPresent(String.self, forKey: .type) ?? "message"
        status = try c.decodeIfPresent(String.self, forKey: .status) ?? "completed"
        role = try c.decodeIfPresent(String.self, forKey: .role) ?? "assistant"
        content = try c.decodeIfPresent([Part].self, forKey: .content) ?? []
        callID = try c.decodeIfPresent(String.self, forKey: .callID)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        arguments = try c.decodeIfPresent(String.self, forKey: .arguments)
        output = try c.decodeIfPresent(String.self, forKey: .output)
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(type, forKey: .type)
        try c.encode(status, forKey: .status)
        switch type {
        case "function_call":
            try c.encode(callID ?? "", forKey: .callID)
            try c.encode(name ?? "", forKey: .name)
            try c.encode(arguments ?? "", forKey: .arguments)
        case "function_call_output":
            try c.encode(callID ?? "", forKey: .callID)
            try c.encode(output ?? "", forKey: .output)
        case "reasoning":
            try c.encode([Part](), forKey: .summary)
            try c.encode(content, forKey: .content)
        default:
            try c.encode(role, forKey: .role)
            try c.encode(content, forKey: .content)
        }
    }

    /// An input message, its parts typed by role.
    static func input(role: String, text: String) -> ResponseItem {
        ResponseItem(
            id: ResponseObject.makeID("msg"), status: "completed", role: role,
            content: [role == "assistant" ? .output(text) : Part(type: "input_text", text: text)])
    }

    /// A call the model made (in `input`, or in a response's `output` with its own `fc_` id).
    static func functionCall(_ call: ToolCall, id: String = ResponseObject.makeID("fc"), status: String = "completed")
        -> ResponseItem
    {
        ResponseItem(
            id: id, type: "function_call", status: status, role: "assistant", content: [], callID: call.id,
            name: call.name, arguments: call.arguments)
    }

    /// A thinking model's reasoning (in `output` with its own `rs_` id, or given back in `input`).
    static func reasoning(_ text: String, id: String = ResponseObject.makeID("rs"), status: String = "completed")
        -> ResponseItem
    {
        ResponseItem(
            id: id, type: "reasoning", status: status, role: "assistant",
            content: [Part(type: "reasoning_text", text: text)])
    }

    /// A tool's result for call `callID`.
    static func functionCallOutput(callID: String, output: String) -> ResponseItem {
        ResponseItem(
            id: ResponseObject.makeID("fco"), type: "function_call_output", status: "completed", role: "tool",
            content: [], callID: callID, output: output)
    }

    /// The call of a `function_call` item.
    var call: ToolCall? {
        guard type == "function_call" else { return nil }
        return ToolCall(id: callID ?? "", name: name ?? "", arguments: arguments ?? "")
    }

    /// All of the item's text, as the model sees it (a call's arguments, a tool's output).
    var text: String {
        switch type {
        case "function_call": arguments ?? ""
        case "function_call_output": output ?? ""
        default: content.map(\.text).joined()
        }
    }
}
