/// What the connection has to send once the handler has answered.
struct ResponseHead: Sendable {
    var status: Int
    var headers: [(String, String)]
    /// nil for an event stream.
    var body: [UInt8]?
}
