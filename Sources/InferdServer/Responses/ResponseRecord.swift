/// Everything inferd keeps of a response (the store's opaque payload): the object a client
/// sees, its input items, the history a `previous_response_id` continues (earlier turns, this
/// input and this output), and how its stream went: whether it started and where each text
/// delta ended (UTF-8 offsets into the output text), so its events can be sent again with the
/// same sequence numbers without storing them. A response with tools records its stream as
/// `steps` instead (its items open as they show: a message once text shows, a function call
/// once the model starts one), as does a thinking model's (its reasoning item opens first).
struct ResponseRecord: Codable, Sendable {
    var response: ResponseObject
    var input: [ResponseItem]
    var history: [HistoryMessage]
    /// The id the output message has (or will have) from its first stream event on.
    var outputItemID = ResponseObject.makeID("msg")
    var started = false
    var deltaEnds: [Int] = []
    /// The API key's owner hash that created it (nil without authentication).
    var owner: String?
    /// With tools: the stream's events after `response.in_progress`, one per step, each naming
    /// its output item by index (`output` holds the text and arguments they slice); nil without tools.
    var steps: [StreamStep]?
    /// A thinking model's answer: the tokens it had generated when its reasoning last grew
    /// (`usage.output_tokens_details.reasoning_tokens`); nil without reasoning.
    var reasoningTokens: Int?
    /// With `include: ["message.output_text.logprobs"]`: the answer's tokens' entries so far
    /// (at the end, those spelling the output text); nil when not asked for.
    var logprobs: [LogprobEntryBody]?

    /// One event of a stream with tools.
    enum StreamStep: Codable, Sendable, Equatable {
        /// `response.output_item.added` then `response.content_part.added` for message `item`.
        case messageAdded(item: Int)
        case partAdded(item: Int)
        /// `response.output_text.delta`: UTF-8 offsets `start..<end` into message `item`'s text.
        case text(item: Int, start: Int, end: Int)
        /// `response.output_item.added` for function call `item` (arguments still empty).
        case callAdded(item: Int)
        /// `response.function_call_arguments.delta`: offsets into call `item`'s arguments.
        case arguments(item: Int, start: Int, end: Int)
        /// `response.output_item.added` for reasoning `item` (a thinking model's, before the
        /// message and calls).
        case reasoningAdded(item: Int)
        /// `response.reasoning_text.delta`: offsets into reasoning `item`'s text.
        case reasoning(item: Int, start: Int, end: Int)
        /// The reasoning closed (`</think>`): `response.reasoning_text.done` then
        /// `response.output_item.done` for reasoning `item`, before the text and calls after it.
        case reasoningDone(item: Int)
        case reasoningItemDone(item: Int)
    }
}
