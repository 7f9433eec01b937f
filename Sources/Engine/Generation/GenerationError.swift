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
    /// The request's deadline passed before it was given a place; nothing was computed.
    case queueTimeout

    public var description: String {
        switch self {
        case .contextOverflow(let p, let m, let c):
            "prompt of \(p) tokens plus max_tokens \(m) is \(p + m) tokens, past the context length of \(c)"
        case .emptyPrompt: "the prompt is empty"
        case .invalidOption(let name, let reason): "option \(name) \(reason)"
        case .computeFailed(let why): "generation failed: \(why)"
        case .shuttingDown: "the engine is shutting down"
        case .serverBusy(let n, _): "the server is busy: \(n) requests are already waiting"
        case .queueTimeout: "the request timed out while waiting for the engine"
        }
    }
}
