import Engine

/// What a request reports while it waits and runs. Snapshots are the whole answer so far.
public enum TurnEvent: Sendable {
    /// Waiting; `position` 1 is next. Sent again whenever the position changes.
    case queued(position: Int)
    /// The prompt is processed; the first token comes next.
    case started(promptTokens: Int, cachedTokens: Int)
    case snapshot(content: String)
}
