/// Everything inferd keeps of a response (the store's opaque payload): the object a client
/// sees, its input items, the history a `previous_response_id` continues (earlier turns, this
/// input and this output), and how its stream went: whether it started and where each text
/// delta ended (UTF-8 offsets into the output text), so its events can be sent again with the
/// same sequence numbers without storing them.
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
}
