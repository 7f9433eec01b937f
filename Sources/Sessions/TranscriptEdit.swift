/// An edit of a session's transcript by hand (OpenAI's conversation items): messages added at
/// its end, or one entry deleted. It is run by the session's actor as a request of its queue,
/// like a turn, so it never overlaps a turn: it waits for the running one (or is refused with
/// `on_busy: reject`), takes the turn lease when the store is shared, and is written in one
/// transaction.
public enum TranscriptEdit: Sendable, Equatable {
    /// Messages appended in order: each a role (user, assistant, system or developer) and text.
    case append([Message])
    /// The entry at this position is deleted (it leaves a `deleted` entry behind, without content).
    case delete(position: Int)

    public struct Message: Sendable, Equatable {
        public var role: String
        public var text: String

        public init(role: String, text: String) {
            self.role = role
            self.text = text
        }
    }
}
