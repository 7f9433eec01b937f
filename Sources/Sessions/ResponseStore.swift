import Foundation

/// Stored responses of the Responses API, in the same SQLite file as the session transcripts
/// (`inferd.sqlite`, its own `responses` table and its own connection), so they survive a
/// restart. The single-server `ResponseStoring` (`PostgresResponseStore` is the shared one).
/// Opening marks a response that was still `queued` or `in_progress` as `failed` +
/// `interrupted`: the process ended under it, and it is never run again.
public final class ResponseStore: ResponseStoring {
    private let db: SQLiteDatabase
    /// Ids of the responses found unfinished (and marked failed) when the store was opened.
    public let interruptedOnOpen: [String]

    /// Opens (creating if needed) `dataDir/inferd.sqlite`, the sessions' database file.
    public static func open(dataDir: String) throws(StoreError) -> ResponseStore {
        do {
            try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        } catch {
            throw StoreError("cannot create data_dir \(dataDir): \(error.localizedDescription)")
        }
        return try ResponseStore(
            path: URL(fileURLWithPath: dataDir).appendingPathComponent(TranscriptStore.fileName).path)
    }

    /// An in-memory store: nothing survives the process.
    public static func inMemory() -> ResponseStore {
        // Opening ":memory:" cannot meet a damaged file or a read-only folder.
        try! ResponseStore(path: ":memory:")
    }

    public var isShared: Bool { false }

    public init(path: String) throws(StoreError) {
        db = try SQLiteDatabase(path: path)
        do {
            if path != ":memory:" {
                let mode = try db.query("PRAGMA journal_mode=WAL").first?.first?.text
                guard mode == "wal" else { throw StoreError("cannot switch to WAL mode (got \(mode ?? "nothing"))") }
            }
            try db.execute("PRAGMA synchronous=NORMAL")
            // The migration step of this table: created when missing, never touching the sessions' tables.
            try db.execute(
                """
                CREATE TABLE IF NOT EXISTS responses(
                    id TEXT PRIMARY KEY, owner TEXT, created INTEGER NOT NULL, status TEXT NOT NULL,
                    interrupted INTEGER NOT NULL DEFAULT 0, payload TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS responses_created ON responses(created);
                CREATE TABLE IF NOT EXISTS conversation_metadata(id TEXT PRIMARY KEY, payload TEXT NOT NULL);
                """)
            interruptedOnOpen = try db.transaction { t throws(StoreError) in
                let ids = try t.query(
                    "SELECT id FROM responses WHERE status IN ('queued', 'in_progress') ORDER BY created, rowid"
                ).compactMap { $0.first?.text }
                try t.query(
                    "UPDATE responses SET status = 'failed', interrupted = 1 WHERE status IN ('queued', 'in_progress')")
                return ids
            }
        } catch {
            throw StoreError("database \(path) is unusable: \(error)")
        }
    }

    /// Writes `r`, replacing what was stored under its id (its place in the age order is kept).
    public func save(_ r: StoredResponse) throws(StoreError) {
        try db.query(
            """
            INSERT INTO responses(id, owner, created, status, interrupted, payload) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET status = excluded.status, interrupted = excluded.interrupted,
                payload = excluded.payload
            """,
            [
                .text(r.id), r.owner.map { .text($0) } ?? .null, .int(r.createdAt), .text(r.status),
                .int(r.interrupted ? 1 : 0), .text(r.payload),
            ])
    }

    public func load(_ id: String) throws(StoreError) -> StoredResponse? {
        let rows = try db.query(
            "SELECT id, owner, created, status, interrupted, payload FROM responses WHERE id = ?", [.text(id)])
        guard let row = rows.first else { return nil }
        return StoredResponse(
            id: row[0].text ?? id, owner: row[1].text, createdAt: row[2].int ?? 0, status: row[3].text ?? "failed",
            payload: row[5].text ?? "{}", interrupted: (row[4].int ?? 0) != 0)
    }

    /// Removes a response; false when there was none.
    @discardableResult
    public func delete(_ id: String) throws(StoreError) -> Bool {
        try db.transaction { t throws(StoreError) in
            let n = try t.query("SELECT COUNT(*) FROM responses WHERE id = ?", [.text(id)]).first?.first?.int ?? 0
            try t.query("DELETE FROM responses WHERE id = ?", [.text(id)])
            return n > 0
        }
    }

    /// A conversation's metadata (the server's JSON), kept beside the session it names.
    public func saveConversationMetadata(_ id: String, _ payload: String) throws(StoreError) {
        try db.query(
            "INSERT INTO conversation_metadata(id, payload) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET payload = excluded.payload",
            [.text(id), .text(payload)])
    }

    public func conversationMetadata(_ id: String) throws(StoreError) -> String? {
        try db.query("SELECT payload FROM conversation_metadata WHERE id = ?", [.text(id)]).first?.first?.text
    }

    public func deleteConversationMetadata(_ id: String) throws(StoreError) {
        try db.query("DELETE FROM conversation_metadata WHERE id = ?", [.text(id)])
    }

    public var count: Int {
        (try? db.query("SELECT COUNT(*) FROM responses").first?.first?.int) ?? 0
    }

    /// Retention by age: deletes finished responses created before `olderThan` (Unix seconds),
    /// whoever owns them. Unfinished ones are never pruned. Returns the ids deleted.
    @discardableResult
    public func prune(olderThan cutoff: Int) throws(StoreError) -> [String] {
        try db.transaction { t throws(StoreError) in
            let ids = try t.query(
                "SELECT id FROM responses WHERE \(Self.finished) AND created < ? ORDER BY created, rowid",
                [.int(cutoff)]
            ).compactMap { $0.first?.text }
            for id in ids { try t.query("DELETE FROM responses WHERE id = ?", [.text(id)]) }
            return ids
        }
    }

    public func holdings(of owner: String?) throws(StoreError) -> ResponseHoldings {
        let who: SQLiteDatabase.Value = owner.map { .text($0) } ?? .null
        let row = try db.query(
            """
            SELECT COUNT(*), COALESCE(SUM(owner IS ?), 0),
                COALESCE(SUM(owner IS ? AND status IN ('queued', 'in_progress')), 0) FROM responses
            """, [who, who]
        ).first
        return ResponseHoldings(
            owned: row?[1].int ?? 0, ownedUnfinished: row?[2].int ?? 0, total: row?[0].int ?? 0)
    }

    /// Deletes at most `count` of `owner`'s oldest finished responses; never another owner's.
    @discardableResult
    public func evictOldestFinished(of owner: String?, count: Int) throws(StoreError) -> [String] {
        guard count > 0 else { return [] }
        let who: SQLiteDatabase.Value = owner.map { .text($0) } ?? .null
        return try db.transaction { t throws(StoreError) in
            let ids = try t.query(
                "SELECT id FROM responses WHERE owner IS ? AND \(Self.finished) ORDER BY created, rowid LIMIT ?",
                [who, .int(count)]
            ).compactMap { $0.first?.text }
            for id in ids { try t.query("DELETE FROM responses WHERE id = ?", [.text(id)]) }
            return ids
        }
    }

    private static let finished = "status NOT IN ('queued', 'in_progress')"

    /// One server runs every response it stores: its registry cancels them, nobody else asks.
    public func requestCancel(_ id: String) async throws(StoreError) -> Bool { false }
    public func isCancelRequested(_ id: String) async throws(StoreError) -> Bool { false }
}
