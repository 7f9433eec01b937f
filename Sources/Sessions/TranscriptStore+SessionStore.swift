/// The SQLite store serves one server, whose session actors already serialize turns: a lease
/// is always granted, and nothing else writes the transcripts.
extension TranscriptStore: SessionStore {
    public var isShared: Bool { false }

    public func loadSession(_ id: String) throws(StoreError) -> StoredSession? {
        try loadAll().first { $0.id == id }
    }

    public func sessionOfRequest(_ requestID: String) throws(StoreError) -> String? {
        try db.query(
            "SELECT session_id FROM entries WHERE request_id = ? AND kind = 'response' LIMIT 1", [.text(requestID)]
        ).first?.first?.text
    }

    public func tryTurnLease(session: String) -> (any TurnLease)? { LocalTurnLease() }

    struct LocalTurnLease: TurnLease {
        func release() {}
    }
}
