import GenerationVocabulary

/// Errors of the session API, each with what the caller needs to act on it.
public enum SessionError: Error, Sendable, Equatable, CustomStringConvertible {
    case sessionNotFound(String)
    case requestNotFound(String)
    /// `on_busy: reject` while a request runs or waits.
    case busy(activeRequest: String?)
    /// `on_busy: queue` with `limit` requests already waiting.
    case queueFull(limit: Int)
    case duplicateRequest(String)
    /// A transcript edit named an entry the transcript does not hold (never, or no longer).
    case entryNotFound(position: Int)
    /// The engine refused or failed the generation (context overflow, compute failure, …).
    case generation(GenerationError)
    /// The transcript store could not record the turn.
    case storage(String)
    /// The store cannot be reached (PostgreSQL down or the connection lost): nothing was recorded
    /// or the turn ends unrecorded (`interrupted`); the request may be retried later.
    case storeUnavailable(String)
    /// The chat template cannot render the conversation (or the model has none).
    case chatTemplate(ChatTemplateError)

    public var description: String {
        switch self {
        case .sessionNotFound(let id): "no session \(id)"
        case .requestNotFound(let id): "no request \(id)"
        case .busy(let active?): "the session is answering request \(active) (on_busy is reject)"
        case .busy(nil): "the session is answering a request on another server (on_busy is reject)"
        case .queueFull(let limit): "the session already has \(limit) requests waiting"
        case .duplicateRequest(let id): "request \(id) is already in this session"
        case .entryNotFound(let position): "the transcript holds no entry at position \(position)"
        case .generation(let e): "\(e)"
        case .storage(let why): "the transcript could not be stored: \(why)"
        case .storeUnavailable(let why): "the session store is unavailable: \(why)"
        case .chatTemplate(let e): "\(e)"
        }
    }
}
