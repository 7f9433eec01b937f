/// Where stored Responses-API responses (and conversations' metadata) live durably.
/// `ResponseStore` (SQLite in `data_dir`, the default) serves one server;
/// `PostgresResponseStore` (`store_url`) is shared by every replica on one database, so a
/// response created on one replica can be retrieved, listed, continued (`previous_response_id`)
/// and deleted through any other.
///
/// The store keeps the server's JSON payload and never reads it; it queries only the columns of
/// `StoredResponse`. Everything that touches the database is asynchronous: a shared store runs it on a thread of
/// its own, so a slow or hung database holds no cooperative thread (SQLite's synchronous methods
/// witness these requirements as they are).
public protocol ResponseStoring: Sendable {
    /// True when other servers (replicas) read and write the same responses.
    var isShared: Bool { get }
    /// The responses that were `queued` or `in_progress` with no server running them when the
    /// store was opened (this replica's own, or a dead replica's), now `failed` + `interrupted`.
    var interruptedOnOpen: [String] { get }
    /// How many responses are stored.
    var count: Int { get }

    /// Writes `r`, replacing what was stored under its id (its place in the age order is kept).
    func save(_ r: StoredResponse) async throws(StoreError)
    /// The response stored under `id`, or nil. On a shared store, an unfinished response whose
    /// replica has died is marked `failed` + `interrupted` on the way.
    func load(_ id: String) async throws(StoreError) -> StoredResponse?
    /// Removes a response; false when there was none.
    @discardableResult func delete(_ id: String) async throws(StoreError) -> Bool
    /// Retention by age: deletes finished responses created before `olderThan` (Unix seconds),
    /// whoever owns them (age is a response's own). Unfinished ones are never pruned. Returns the
    /// ids deleted, oldest first.
    @discardableResult func prune(olderThan cutoff: Int) async throws(StoreError) -> [String]
    /// What `owner` (nil: nobody authenticated) and everyone together hold now.
    func holdings(of owner: String?) async throws(StoreError) -> ResponseHoldings
    /// Retention by count, within one owner: deletes at most `count` of `owner`'s own oldest
    /// finished responses, never another owner's and never an unfinished one. Returns the ids
    /// deleted, oldest first.
    @discardableResult func evictOldestFinished(of owner: String?, count: Int) async throws(StoreError) -> [String]

    /// A conversation's metadata (the server's JSON), kept beside the session it names.
    func saveConversationMetadata(_ id: String, _ payload: String) async throws(StoreError)
    func conversationMetadata(_ id: String) async throws(StoreError) -> String?
    func deleteConversationMetadata(_ id: String) async throws(StoreError)

    /// Asks the replica running background response `id` to cancel it (it polls
    /// `isCancelRequested`). False when `id` is not stored unfinished. A store that is not
    /// shared has no other replica to ask: false.
    func requestCancel(_ id: String) async throws(StoreError) -> Bool
    /// Whether some replica asked for `id` to be cancelled.
    func isCancelRequested(_ id: String) async throws(StoreError) -> Bool
}
