/// The SQLite store serves one server, whose session actors already serialize turns: a lease
/// is always granted, and nothing else writes the transcripts.
extension TranscriptStore: SessionStore {
    public var isShared: Bool { false }

    public func loadSession(_ id: String) throws(StoreError) -> StoredSession? {
        try loadAll().first { $0.id == id }
    }

    public func tryTurnLease(session: String) -> (any TurnLease)? { LocalTurnLease() }

    struct LocalTurnLease: TurnLease {
        func release() {}
    }
}
