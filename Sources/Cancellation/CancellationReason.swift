/// Why the owner of a request stopped it. One vocabulary for every layer: the HTTP layer names
/// a client that went away, a cancel request, a shutdown or a deadline; sessions add a request
/// replaced by a newer one and a deleted session. The raw value is the wire's `reason` field and
/// what transcripts store.
public enum CancellationReason: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    case clientDisconnected = "client_disconnected"
    case cancelRequest = "cancel_request"
    /// A newer request took its place (`on_busy: replace`).
    case superseded
    case sessionDeleted = "session_deleted"
    case shutdown
    case timeout

    public var description: String { rawValue }
}
