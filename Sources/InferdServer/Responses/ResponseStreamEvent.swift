/// One server-sent event of a Responses stream, in OpenAI's shape: `type`, `sequence_number`
/// (from 0, rising by one) and the fields of that type.
struct ResponseStreamEvent: Encodable, Sendable, Equatable {
    var type: String
    var sequenceNumber: Int
    var response: ResponseObject?
    var outputIndex: Int?
    var contentIndex: Int?
    var itemId: String?
    var item: ResponseItem?
    var part: ResponseItem.Part?
    var delta: String?
    var text: String?
    var logprobs: [LogprobEntryBody]?
    /// `response.function_call_arguments.done`: the call's name and whole arguments.
    var name: String?
    var arguments: String?

    enum CodingKeys: String, CodingKey {
        case type, response, item, part, delta, text, logprobs, name, arguments
        case sequenceNumber = "sequence_number"
        case outputIndex = "output_index"
        case contentIndex = "content_index"
        case itemId = "item_id"
    }

    /// The event that ends a stream: `response.completed`, `.incomplete`, `.failed` or `.cancelled`.
    var isTerminal: Bool {
        ["response.completed", "response.incomplete", "response.failed", "response.cancelled"].contains(type)
    }
}
