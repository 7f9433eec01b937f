import Foundation

/// One HTTP request to an upstream, as the streaming client sends it.
public struct HTTPTransferRequest: Sendable {
    public enum Method: String, Sendable { case get = "GET", post = "POST" }
    public var url: String
    public var method: Method
    public var body: Data?
    /// Extra header lines, `Name: value`. Values may be secrets (an API key): never logged.
    public var headers: [String]

    public init(url: String, method: Method, body: Data? = nil, headers: [String] = []) {
        self.url = url
        self.method = method
        self.body = body
        self.headers = headers
    }
}

/// Limits of one transfer. Connect is libcurl's own timer; first byte, idle and the deadline are
/// checked by the transfer's loop, which wakes at least every `pollInterval`.
public struct TransferOptions: Sendable {
    public var connectTimeout: Duration = .seconds(5)
    /// From the start of the transfer until the response's first byte (the upstream's queue and
    /// prompt processing happen in this time).
    public var firstByteTimeout: Duration = .seconds(120)
    /// Longest silence between two received bytes once the response started.
    public var idleTimeout: Duration = .seconds(30)
    /// Longest line of a successful response; a longer one ends the transfer with an error.
    public var maxLineBytes = 1 << 20
    /// Most bytes kept of an error response's body (the rest is read and dropped).
    public var maxErrorBodyBytes = 64 << 10
    /// When the whole transfer must be over (the request's deadline).
    public var deadline: ContinuousClock.Instant?
    /// Verify the upstream's TLS certificate and host name (on by default; off only for tests).
    public var verifyTLS = true
    var pollInterval: Duration = .milliseconds(100)

    public init() {}
}

/// What the response said, once it ended.
public struct HTTPResponseSummary: Sendable, Equatable {
    public var status: Int
    /// `Retry-After` in seconds, when the response had one.
    public var retryAfterSeconds: Int?
    /// The body of a non-2xx response (at most `maxErrorBodyBytes`); empty for a 2xx one, whose
    /// lines went to the line handler.
    public var errorBody: String
}

/// How a transfer ended.
public enum TransferOutcome: Sendable, Equatable {
    /// The response ended normally (the body is complete).
    case finished(HTTPResponseSummary)
    /// The line handler asked to stop (it knows why); the connection was closed.
    case stoppedByHandler
    /// Its owner cancelled it; the connection was closed.
    case cancelled
    /// `TransferOptions.deadline` passed; the connection was closed.
    case deadlinePassed
    case failed(HTTPTransferError)
}

/// A transfer that ended without a complete response.
public enum HTTPTransferError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request never reached the upstream (name not resolved, connection refused or timed
    /// out, TLS handshake failed): nothing ran there, so another upstream may be tried.
    case unreachable(String)
    case firstByteTimeout(seconds: Double)
    case idleTimeout(seconds: Double)
    case lineTooLong(limit: Int)
    /// The connection failed after the request was sent.
    case transport(String)

    public var description: String {
        switch self {
        case .unreachable(let why): "the upstream is unreachable: \(why)"
        case .firstByteTimeout(let s): "the upstream sent nothing for \(s) s after the request"
        case .idleTimeout(let s): "the upstream's response stalled for \(s) s"
        case .lineTooLong(let limit): "the upstream sent a line longer than \(limit) bytes"
        case .transport(let why): "the connection to the upstream failed: \(why)"
        }
    }
}
