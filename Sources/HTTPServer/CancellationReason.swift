/// Why the owner of a request cancelled its Task.
public enum CancellationReason: String, Sendable {
    case clientDisconnected = "client_disconnected"
    case cancelRequest = "cancel_request"
    case shutdown
    case timeout
}
