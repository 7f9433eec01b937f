/// Errors of a generation request, each with what the caller needs to fix it.
public enum GenerationError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The prompt plus the requested completion does not fit the context.
    case contextOverflow(promptTokens: Int, maxTokens: Int, contextLength: Int)
    case emptyPrompt
    case invalidOption(name: String, reason: String)
    /// The engine failed while computing (a bug or a damaged model), not the caller's fault.
    case computeFailed(String)
    case shuttingDown
    /// `max_queue` generations already wait; nothing was started. Try again in about
    /// `retryAfterSeconds`.
    case serverBusy(queueLength: Int, retryAfterSeconds: Int)
    /// The request's tenant (its API key) already holds `limit` generations running or waiting, its
    /// fair share (`per_key_max_generations`); nothing was started. Try again in about
    /// `retryAfterSeconds`. The server itself may have room: other tenants are still served.
    case tenantBusy(holding: Int, limit: Int, retryAfterSeconds: Int)
    /// The request's deadline passed before it was given a place; nothing was computed.
    case queueTimeout
    /// A remote backend's upstream did not take the request: unreachable (after trying the next
    /// upstream once) or it answered 429/503. Nothing was generated; try again in about
    /// `retryAfterSeconds` (the upstream's `Retry-After` when it sent one).
    case upstreamUnavailable(String, retryAfterSeconds: Int)
    /// The upstream refused the request (the caller's request, or this server's credentials), with
    /// its message. Never retried.
    case upstreamRejected(UpstreamRejection, message: String)
    /// The upstream failed once it had the request: the connection broke, the stream was malformed
    /// or stalled. Never retried (it may have produced output already).
    case upstreamFailed(String)

    public var description: String {
        switch self {
        case .contextOverflow(let p, let m, let c):
            "prompt of \(p) tokens plus max_tokens \(m) is \(p + m) tokens, past the context length of \(c)"
        case .emptyPrompt: "the prompt is empty"
        case .invalidOption(let name, let reason): "option \(name) \(reason)"
        case .computeFailed(let why): "generation failed: \(why)"
        case .shuttingDown: "the engine is shutting down"
        case .serverBusy(let n, _): "the server is busy: \(n) requests are already waiting"
        case .tenantBusy(let n, let limit, _):
            "this API key already has \(n) generations running or waiting, its share of at most \(limit)"
        case .queueTimeout: "the request timed out while waiting for the engine"
        case .upstreamUnavailable(let why, _): "the upstream is unavailable: \(why)"
        case .upstreamRejected(_, let message): "the upstream refused the request: \(message)"
        case .upstreamFailed(let why): "the upstream failed: \(why)"
        }
    }
}
