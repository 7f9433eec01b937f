/// A failure of the transcript database, with SQLite's own message.
public struct StoreError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
