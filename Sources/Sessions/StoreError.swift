/// A failure of the session store, with the database's own message.
public struct StoreError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    /// The database could not be reached (connection refused or lost), as opposed to a statement
    /// it refused: requests answer 503 `store_unavailable` and may be retried later.
    public let unavailable: Bool
    public init(_ description: String, unavailable: Bool = false) {
        self.description = description
        self.unavailable = unavailable
    }
}
