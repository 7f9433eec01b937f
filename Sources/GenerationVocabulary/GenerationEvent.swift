/// What generation reports while it runs. Text events carry the whole answer so far
/// (a snapshot), never a piece to append. The one event vocabulary from the engine through
/// sessions to the wire: each case's `name` is its wire name.
public enum GenerationEvent: Sendable, Equatable {
    /// Waiting for a place in the engine; `position` 1 is next. Sent again whenever the
    /// position changes (also when a running background generation is parked).
    case queued(position: Int)
    /// The prompt is in the cache; the first token comes next.
    case started(promptTokens: Int, cachedTokens: Int)
    /// The visible answer grew. `content` is all of it so far.
    case snapshot(content: String, completionTokens: Int)

    public var name: GenerationEventName {
        switch self {
        case .queued: .queued
        case .started: .started
        case .snapshot: .snapshot
        }
    }
}
