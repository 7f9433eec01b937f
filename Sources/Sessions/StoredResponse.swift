/// One stored Responses-API response as the store keeps it: what it must query on (owner, age,
/// status) in columns, and everything else as the server's own JSON `payload`, which the store
/// never reads. `interrupted` is set when the store found it still `queued` or `in_progress`
/// on opening (the process ended while it ran); its status is then `failed`. `replica` names the
/// replica that runs it while it is unfinished (a shared store fails only a dead replica's).
public struct StoredResponse: Sendable, Equatable {
    public var id: String
    public var owner: String?
    /// Unix seconds.
    public var createdAt: Int
    public var status: String
    public var payload: String
    public var interrupted: Bool
    /// The replica that wrote it (`replica_id`); nil in a store that is not shared.
    public var replica: String?

    public init(
        id: String, owner: String?, createdAt: Int, status: String, payload: String, interrupted: Bool = false,
        replica: String? = nil
    ) {
        self.id = id
        self.owner = owner
        self.createdAt = createdAt
        self.status = status
        self.payload = payload
        self.interrupted = interrupted
        self.replica = replica
    }

    /// Statuses of a response that has not finished.
    public static let unfinishedStatuses: Set<String> = ["queued", "in_progress"]
}
