import Foundation

/// Sessions and transcripts in SQLite (WAL mode): written in a transaction when a prompt is
/// accepted and at each terminal event, so a restart, even after `kill -9`, brings every
/// session back. Opening marks responses that were in flight `interrupted`.
public final class TranscriptStore: Sendable {
    public static let fileName = "inferd.sqlite"
    let db: SQLiteDatabase
    /// Responses found in flight (and marked interrupted) when the store was opened.
    public let interruptedOnOpen: Int

    /// Opens (creating if needed) `dataDir/inferd.sqlite`. A corrupt or unwritable database is
    /// an error here, never silent loss later.
    public static func open(dataDir: String) throws(StoreError) -> TranscriptStore {
        do {
            try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        } catch {
            throw StoreError("cannot create data_dir \(dataDir): \(error.localizedDescription)")
        }
        let path = URL(fileURLWithPath: dataDir).appendingPathComponent(fileName).path
        return try TranscriptStore(path: path)
    }

    /// An in-memory store (for one-off servers and tests that need no durability).
    public static func inMemory() -> TranscriptStore {
        // Opening ":memory:" cannot meet a damaged file or a read-only folder.
        try! TranscriptStore(path: ":memory:")
    }

    init(path: String) throws(StoreError) {
        db = try SQLiteDatabase(path: path)
        do {
            let check = try db.query("PRAGMA quick_check")
            guard check.first?.first?.text == "ok" else {
                throw StoreError(
                    "integrity check failed: \(check.compactMap { $0.first?.text }.joined(separator: "; "))")
            }
            if path != ":memory:" {
                let mode = try db.query("PRAGMA journal_mode=WAL").first?.first?.text
                guard mode == "wal" else { throw StoreError("cannot switch to WAL mode (got \(mode ?? "nothing"))") }
            }
            // WAL with synchronous=NORMAL survives a killed process (not a power cut) and keeps
            // commits off the disk's flush path.
            try db.execute("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON")
            try db.execute(
                """
                CREATE TABLE IF NOT EXISTS sessions(
                    id TEXT PRIMARY KEY, created INTEGER NOT NULL, on_busy TEXT NOT NULL, options TEXT);
                CREATE TABLE IF NOT EXISTS entries(
                    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                    position INTEGER NOT NULL, kind TEXT NOT NULL, content TEXT NOT NULL,
                    request_id TEXT, status TEXT, finish_reason TEXT, reason TEXT,
                    PRIMARY KEY(session_id, position));
                """)
            // Databases from before session ownership gain the column (existing sessions: no owner).
            let columns = try db.query("PRAGMA table_info(sessions)").compactMap { $0[1].text }
            if !columns.contains("owner") { try db.execute("ALTER TABLE sessions ADD COLUMN owner TEXT") }
            // And those from before tool calls gain the entries' extras (see `TranscriptEntry.Extras`).
            let entryColumns = try db.query("PRAGMA table_info(entries)").compactMap { $0[1].text }
            if !entryColumns.contains("extras") { try db.execute("ALTER TABLE entries ADD COLUMN extras TEXT") }
            interruptedOnOpen = try db.transaction { t throws(StoreError) in
                let n = try t.query("SELECT COUNT(*) FROM entries WHERE status = 'in_progress'").first?.first?.int ?? 0
                try t.query("UPDATE entries SET status = 'interrupted' WHERE status = 'in_progress'")
                return n
            }
        } catch {
            throw StoreError("database \(path) is unusable: \(error)")
        }
    }

    public func createSession(_ session: StoredSession) throws(StoreError) {
        try db.transaction { t throws(StoreError) in
            try t.query(
                "INSERT INTO sessions(id, created, on_busy, options, owner) VALUES (?, ?, ?, ?, ?)",
                [
                    .text(session.id), .int(session.created), .text(session.onBusy.rawValue),
                    Self.optional(session.options), Self.optional(session.owner),
                ])
            for entry in session.entries { try Self.insert(entry, session: session.id, t) }
        }
    }

    /// A turn was accepted: its input entries and the response's `in_progress` entry, together.
    public func beginTurn(session: String, inputs: [TranscriptEntry], response: TranscriptEntry) throws(StoreError) {
        try db.transaction { t throws(StoreError) in
            for input in inputs { try Self.insert(input, session: session, t) }
            try Self.insert(response, session: session, t)
        }
    }

    /// A turn of one prompt.
    public func beginTurn(session: String, prompt: TranscriptEntry, response: TranscriptEntry) throws(StoreError) {
        try beginTurn(session: session, inputs: [prompt], response: response)
    }

    /// A terminal event: the response entry takes its final content and status.
    public func finishTurn(session: String, response: TranscriptEntry) throws(StoreError) {
        try db.transaction { t throws(StoreError) in
            try t.query(
                """
                UPDATE entries SET content = ?, status = ?, finish_reason = ?, reason = ?, extras = ?
                WHERE session_id = ? AND position = ?
                """,
                [
                    .text(response.content), Self.optional(response.status?.rawValue),
                    Self.optional(response.finishReason), Self.optional(response.reason),
                    Self.optional(response.extrasJSON), .text(session), .int(response.position),
                ])
        }
    }

    /// A transcript edit by hand, in one transaction (see `SessionStore.editTranscript`).
    public func editTranscript(session: String, adding: [TranscriptEntry], deleting: [Int]) throws(StoreError) {
        try db.transaction { t throws(StoreError) in
            for entry in adding { try Self.insert(entry, session: session, t) }
            for p in deleting {
                try t.query(
                    """
                    UPDATE entries SET kind = 'deleted', content = '', request_id = NULL, status = NULL,
                        finish_reason = NULL, reason = NULL, extras = NULL
                    WHERE session_id = ? AND position = ?
                    """, [.text(session), .int(p)])
            }
        }
    }

    /// A discarded turn leaves the transcript.
    public func removeEntries(session: String, positions: [Int]) throws(StoreError) {
        try db.transaction { t throws(StoreError) in
            for p in positions {
                try t.query("DELETE FROM entries WHERE session_id = ? AND position = ?", [.text(session), .int(p)])
            }
        }
    }

    public func deleteSession(_ id: String) throws(StoreError) {
        try db.transaction { t throws(StoreError) in
            try t.query("DELETE FROM entries WHERE session_id = ?", [.text(id)])
            try t.query("DELETE FROM sessions WHERE id = ?", [.text(id)])
        }
    }

    /// Every stored session with its transcript, oldest first.
    public func loadAll() throws(StoreError) -> [StoredSession] {
        let rows = try db.query("SELECT id, created, on_busy, options, owner FROM sessions ORDER BY created, id")
        var sessions: [StoredSession] = []
        var index: [String: Int] = [:]
        for row in rows {
            let id = row[0].text ?? ""
            index[id] = sessions.count
            sessions.append(
                StoredSession(
                    id: id, created: row[1].int ?? 0, onBusy: BusyPolicy(rawValue: row[2].text ?? "") ?? .queue,
                    options: row[3].text, entries: [], owner: row[4].text))
        }
        let entries = try db.query(
            """
            SELECT session_id, position, kind, content, request_id, status, finish_reason, reason, extras
            FROM entries ORDER BY session_id, position
            """)
        for row in entries {
            guard let i = index[row[0].text ?? ""], let kind = TranscriptEntry.Kind(rawValue: row[2].text ?? "") else {
                continue
            }
            var entry = TranscriptEntry(
                position: row[1].int ?? 0, kind: kind, content: row[3].text ?? "", requestID: row[4].text,
                status: row[5].text.flatMap(TranscriptEntry.Status.init(rawValue:)), finishReason: row[6].text,
                reason: row[7].text)
            entry.readExtras(row[8].text)
            sessions[i].entries.append(entry)
        }
        return sessions
    }

    private static func insert(
        _ e: TranscriptEntry, session: String, _ t: SQLiteDatabase.Transaction
    ) throws(StoreError) {
        try t.query(
            """
            INSERT INTO entries(session_id, position, kind, content, request_id, status, finish_reason, reason, extras)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(session), .int(e.position), .text(e.kind.rawValue), .text(e.content), optional(e.requestID),
                optional(e.status?.rawValue), optional(e.finishReason), optional(e.reason), optional(e.extrasJSON),
            ])
    }

    private static func optional(_ s: String?) -> SQLiteDatabase.Value { s.map { .text($0) } ?? .null }
}
