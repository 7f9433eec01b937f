/// The SQLite store serves one server, whose session actors already serialize turns: a lease
/// is always granted, and nothing else writes the transcripts.
extension TranscriptStore: SessionStore {
    public var isShared: Bool { false }

    public func loadSession(_ id: String) throws(StoreError) -> StoredSession? {
        try loadAll().first { $0.id == id }
    }

    public func listSessions() throws(StoreError) -> [StoredSession] {
        try db.query("SELECT id, created, on_busy, options, owner FROM sessions ORDER BY created, id").map { row in
            StoredSession(
                id: row[0].text ?? "", created: row[1].int ?? 0,
                onBusy: BusyPolicy(rawValue: row[2].text ?? "") ?? .queue, options: row[3].text, entries: [],
                owner: row[4].text)
        }
    }

    public func sessionOfRequest(_ requestID: String, owner: String?) throws(StoreError) -> String? {
        try db.query(
            """
            SELECT e.session_id FROM entries e JOIN sessions s ON s.id = e.session_id
            WHERE e.request_id = ? AND e.kind = 'response' AND s.owner IS ? LIMIT 1
            """, [.text(requestID), owner.map { .text($0) } ?? .null]
        ).first?.first?.text
    }

    public func tryTurnLease(session: String) -> (any TurnLease)? { LocalTurnLease() }

    /// A file this process holds open: reachable while the process runs.
    public func checkReachable() throws(StoreError) {
        _ = try db.query("SELECT 1")
    }

    struct LocalTurnLease: TurnLease {
        func release() {}
    }
}
