import Foundation

/// A response of OpenAI's Responses API (`"object": "response"`), as created, stored, streamed
/// and returned. The request's settings are echoed; `output` is one assistant message with one
/// `output_text` part once text exists.
struct ResponseObject: Codable, Sendable, Equatable {
    struct ErrorBody: Codable, Sendable, Equatable {
        var code: String
        var message: String
    }

    struct IncompleteDetails: Codable, Sendable, Equatable {
        var reason: String
    }

    /// `{"id": "conv_…"}`: the conversation a response belongs to.
    struct ConversationRef: Codable, Sendable, Equatable {
        var id: String
    }

    struct Reasoning: Codable, Sendable, Equatable {
        var effort: String?
        var summary: String?

        /// `{"effort":null,"summary":null}`, as OpenAI answers for a model without reasoning.
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(effort, forKey: .effort)
            try c.encode(summary, forKey: .summary)
        }
    }

    /// `text` as the request gave it (OpenAI echoes the format, schema included).
    struct TextFormat: Codable, Sendable, Equatable {
        struct Format: Codable, Sendable, Equatable {
            var type = "text"
            var name: String?
            var schema: OpenAIJSON?
            var strict: Bool?
            var description: String?
        }
        var format = Format()
        var verbosity: String? = "medium"
    }

    var id: String
    var object = "response"
    var createdAt: Int
    var completedAt: Int?
    var conversation: ConversationRef?
    /// `queued`, `in_progress`, `completed`, `incomplete`, `cancelled` or `failed`.
    var status: String
    var background: Bool
    var error: ErrorBody?
    var incompleteDetails: IncompleteDetails?
    var instructions: String?
    var maxOutputTokens: Int?
    var metadata: [String: String]
    var model: String
    var output: [ResponseItem]
    var parallelToolCalls = false
    var previousResponseId: String?
    var reasoning = Reasoning()
    var store: Bool
    var temperature: Double?
    var text = TextFormat()
    /// `tool_choice` and `tools` as the request gave them.
    var toolChoice: OpenAIJSON = .string("none")
    var tools: [OpenAIJSON] = []
    var topP: Double?
    var truncation: String
    var usage: ResponseUsage?

    enum CodingKeys: String, CodingKey {
        case id, object, status, background, conversation, error, instructions, metadata, model, output, reasoning
        case store
        case temperature, text, tools, truncation, usage
        case createdAt = "created_at"
        case completedAt = "completed_at"
        case incompleteDetails = "incomplete_details"
        case maxOutputTokens = "max_output_tokens"
        case parallelToolCalls = "parallel_tool_calls"
        case previousResponseId = "previous_response_id"
        case toolChoice = "tool_choice"
        case topP = "top_p"
    }

    /// Every key is written, nulls included, as OpenAI does, so a client can read any field.
    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(object, forKey: .object)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(completedAt, forKey: .completedAt)
        try c.encode(conversation, forKey: .conversation)
        try c.encode(status, forKey: .status)
        try c.encode(background, forKey: .background)
        try c.encode(error, forKey: .error)
        try c.encode(incompleteDetails, forKey: .incompleteDetails)
        try c.encode(instructions, forKey: .instructions)
        try c.encode(maxOutputTokens, forKey: .maxOutputTokens)
        try c.encode(metadata, forKey: .metadata)
        try c.encode(model, forKey: .model)
        try c.encode(output, forKey: .output)
        try c.encode(parallelToolCalls, forKey: .parallelToolCalls)
        try c.encode(previousResponseId, forKey: .previousResponseId)
        try c.encode(reasoning, forKey: .reasoning)
        try c.encode(store, forKey: .store)
        try c.encode(temperature, forKey: .temperature)
        try c.encode(text, forKey: .text)
        try c.encode(toolChoice, forKey: .toolChoice)
        try c.encode(tools, forKey: .tools)
        try c.encode(topP, forKey: .topP)
        try c.encode(truncation, forKey: .truncation)
        try c.encode(usage, forKey: .usage)
    }

    var isFinished: Bool { !["queued", "in_progress"].contains(status) }

    /// The text of the output message (empty before any).
    var outputText: String { output.first { $0.type == "message" }?.content.first?.text ?? "" }

    /// A new id: `prefix_` and 32 hex digits.
    static func makeID(_ prefix: String) -> String {
        prefix + "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}
