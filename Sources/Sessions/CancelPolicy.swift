/// What happens to a turn's text when it is stopped while streaming (`on_cancel`).
public enum CancelPolicy: String, Sendable, CaseIterable {
    /// The transcript keeps the last snapshot sent, marked `cancelled`; the next turn sees it.
    case keep
    /// The turn leaves the transcript and the KV cache is rolled back to before it.
    case discard
}
