import Foundation

/// A stored session: its settings and its transcript.
public struct StoredSession: Sendable, Equatable {
    public var id: String
    public var created: Int
    public var onBusy: BusyPolicy
    /// Opaque to the store (the HTTP layer keeps its JSON `options` here).
    public var options: String?
    public var entries: [TranscriptEntry]
    /// Who created it (opaque: the HTTP layer stores a key digest); nil when nobody was
    /// authenticated.
    public var owner: String?

    public init(
        id: String, created: Int, onBusy: BusyPolicy, options: String?, entries: [TranscriptEntry],
        owner: String? = nil
    ) {
        self.owner = owner
        self.id = id
        self.created = created
        self.onBusy = onBusy
        self.options = options
        self.entries = entries
    }
}
