/// What one owner (an API key's digest, or nil) and the whole store hold of stored responses:
/// what the per-key quotas are decided on.
public struct ResponseHoldings: Sendable, Equatable {
    /// The owner's stored responses, finished or not.
    public var owned: Int
    /// Of those, the ones still `queued` or `in_progress` (never evicted).
    public var ownedUnfinished: Int
    /// Every owner's together.
    public var total: Int

    public var ownedFinished: Int { owned - ownedUnfinished }

    public init(owned: Int, ownedUnfinished: Int, total: Int) {
        self.owned = owned
        self.ownedUnfinished = ownedUnfinished
        self.total = total
    }
}
