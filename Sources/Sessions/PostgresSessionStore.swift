import Foundation

/// Sessions and transcripts in PostgreSQL (`store_url`), shared by every server (replica) that
/// names the same database. All libpq calls run on one dedicated thread (`BlockingWorker`).
///
/// A turn's lease is a session-level advisory lock held on a connection of its own for the
/// turn's duration: PostgreSQL releases it when that connection closes, so a replica that dies
/// (even `kill -9`) frees its sessions at once, and the next replica to take a lease records the
/// dead turn's response `interrupted`.
public final class PostgresSessionStore: SessionStore, @unchecked Sendable {
    public var isShared: Bool { true }
    public let interruptedOnOpen: Int
    /// The URL with any password replaced by `***`, for logs and messages.
    public let redactedURL: String
    private let worker: BlockingWorker
    private let conninfo: String
    private let password: String?
    /// Used on the worker's thread only.
    private let main: PostgresConnection
    /// Connections that held a lease and may hold the next; worker's thread only.
    private var idleLeaseConnections: [PostgresConnection] = []
    private static let maxIdleLeaseConnections = 8

    /// The first key of every advisory lock inferd takes (the second is the session id's hash),
    /// so its locks never meet an application's own on a shared database.
    static let lockNamespace = 15_015
    /// The advisory lock that serializes schema migrations of replicas starting together.
    static let migrationLock = 15_016

    /// Connects, applies the schema migrations this build knows, and records `interrupted` every
    /// response left `in_progress` by a server that no longer runs it. An unreachable database is
    /// an error here (the server does not start).
    public static func open(url: String, password: String?) throws(StoreError) -> PostgresSessionStore {
        try PostgresSessionStore(url: url, password: password)
    }

    private init(url: String, password: String?) throws(StoreError) {
        conninfo = url
        self.password = password
        redactedURL = Self.redact(url)
        let worker = BlockingWorker(name: "inferd-postgres")
        self.worker = worker
        let redacted = redactedURL
        do {
            let connection = try worker.runBlocking { () throws(StoreError) in
                try PostgresConnection(conninfo: url, password: password)
            }
            main = connection
            try worker.runBlocking { () throws(StoreError) in try PostgresSchema.migrate(connection) }
            interruptedOnOpen = try worker.runBlocking { () throws(StoreError) in
                try Self.recoverInterrupted(connection)
            }
        } catch {
            worker.stop()
            throw StoreError("PostgreSQL store \(redacted) is unusable: \(error)", unavailable: error.unavailable)
        }
    }

    deinit { worker.stop() }

    /// Records `interrupted` the in-progress responses of sessions whose lease nobody holds.
    private static func recoverInterrupted(_ c: PostgresConnection) throws(StoreError) -> Int {
        let sessions = try c.query("SELECT DISTINCT session_id FROM entries WHERE status = 'in_progress'")
        var count = 0
        for row in sessions {
            guard let id = row[0] else { continue }
            guard try c.query(lockSQL("pg_try_advisory_lock"), [id]).first?.first == "t" else { continue }
            let updated = try c.query(
                "UPDATE entries SET status = 'interrupted' WHERE session_id = $1 AND status = 'in_progress' RETURNING 1",
                [id])
            count += updated.count
            try c.query(lockSQL("pg_advisory_unlock"), [id])
        }
        return count
    }

    static func lockSQL(_ function: String) -> String {
        "SELECT \(function)(\(lockNamespace), hashtext($1))"
    }

    // MARK: Reads

    public func loadAll() throws(StoreError) -> [StoredSession] {
        let c = main
        return try worker.runBlocking { () throws(StoreError) in
            let sessions = try c.query("SELECT id, created, on_busy, options, owner FROM sessions ORDER BY created, id")
            let entries = try c.query(
                """
                SELECT session_id, position, kind, content, request_id, status, finish_reason, reason, extras
                FROM entries ORDER BY session_id, position
                """)
            return Self.assemble(sessions, entries)
        }
    }

    public func loadSession(_ id: String) async throws(StoreError) -> StoredSession? {
        let c = main
        return try await worker.run { () throws(StoreError) in
            // One snapshot for both reads: a turn committed in between cannot split them.
            try c.transaction { () throws(StoreError) in
                try c.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                let sessions = try c.query(
                    "SELECT id, created, on_busy, options, owner FROM sessions WHERE id = $1", [id])
                let entries = try c.query(
                    """
                    SELECT session_id, position, kind, content, request_id, status, finish_reason, reason, extras
                    FROM entries WHERE session_id = $1 ORDER BY position
                    """, [id])
                return Self.assemble(sessions, entries).first
            }
        }
    }

    public func listSessions() async throws(StoreError) -> [StoredSession] {
        let c = main
        return try await worker.run { () throws(StoreError) in
            Self.assemble(
                try c.query("SELECT id, created, on_busy, options, owner FROM sessions ORDER BY created, id"), [])
        }
    }

    public func checkReachable() async throws(StoreError) {
        let c = main
        _ = try await worker.run { () throws(StoreError) in try c.query("SELECT 1") }
    }

    public func sessionOfRequest(_ requestID: String, owner: String?) async throws(StoreError) -> String? {
        let c = main
        return try await worker.run { () throws(StoreError) in
            try c.query(
                """
                SELECT e.session_id FROM entries e JOIN sessions s ON s.id = e.session_id
                WHERE e.request_id = $1 AND e.kind = 'response' AND s.owner IS NOT DISTINCT FROM $2 LIMIT 1
                """, [requestID, owner]
            ).first?.first ?? nil
        }
    }

    private static func assemble(_ sessionRows: [[String?]], _ entryRows: [[String?]]) -> [StoredSession] {
        var sessions: [StoredSession] = []
        var index: [String: Int] = [:]
        for row in sessionRows {
            let id = row[0] ?? ""
            index[id] = sessions.count
            sessions.append(
                StoredSession(
                    id: id, created: Int(row[1] ?? "") ?? 0, onBusy: BusyPolicy(rawValue: row[2] ?? "") ?? .queue,
                    options: row[3], entries: [], owner: row[4]))
        }
        for row in entryRows {
            guard let i = index[row[0] ?? ""], let kind = TranscriptEntry.Kind(rawValue: row[2] ?? "") else {
                continue
            }
            var entry = TranscriptEntry(
                position: Int(row[1] ?? "") ?? 0, kind: kind, content: row[3] ?? "", requestID: row[4],
                status: row[5].flatMap(TranscriptEntry.Status.init(rawValue:)), finishReason: row[6],
                reason: row[7])
            entry.readExtras(row[8])
            sessions[i].entries.append(entry)
        }
        return sessions
    }

    // MARK: Writes (each one transaction)

    public func createSession(_ session: StoredSession) async throws(StoreError) {
        let c = main
        try await worker.run { () throws(StoreError) in
            try c.transaction { () throws(StoreError) in
                try c.query(
                    "INSERT INTO sessions(id, created, on_busy, options, owner) VALUES ($1, $2, $3, $4, $5)",
                    [session.id, "\(session.created)", session.onBusy.rawValue, session.options, session.owner])
                for entry in session.entries { try Self.insert(entry, session: session.id, c) }
            }
        }
    }

    public func beginTurn(session: String, inputs: [TranscriptEntry], response: TranscriptEntry)
        async throws(StoreError)
    {
        let c = main
        try await worker.run { () throws(StoreError) in
            try c.transaction { () throws(StoreError) in
                for input in inputs { try Self.insert(input, session: session, c) }
                try Self.insert(response, session: session, c)
            }
        }
    }

    public func finishTurn(session: String, response: TranscriptEntry) async throws(StoreError) {
        let c = main
        _ = try await worker.run { () throws(StoreError) in
            try c.query(
                """
                UPDATE entries SET content = $1, status = $2, finish_reason = $3, reason = $4, extras = $5
                WHERE session_id = $6 AND position = $7
                """,
                [
                    response.content, response.status?.rawValue, response.finishReason, response.reason,
                    response.extrasJSON, session, "\(response.position)",
                ])
        }
    }

    /// A transcript edit by hand, in one transaction (see `SessionStore.editTranscript`).
    public func editTranscript(session: String, adding: [TranscriptEntry], deleting: [Int]) async throws(StoreError) {
        let c = main
        try await worker.run { () throws(StoreError) in
            try c.transaction { () throws(StoreError) in
                for entry in adding { try Self.insert(entry, session: session, c) }
                guard !deleting.isEmpty else { return }
                try c.query(
                    """
                    UPDATE entries SET kind = 'deleted', content = '', request_id = NULL, status = NULL,
                        finish_reason = NULL, reason = NULL, extras = NULL
                    WHERE session_id = $1 AND position = ANY($2::integer[])
                    """,
                    [session, "{" + deleting.map(String.init).joined(separator: ",") + "}"])
            }
        }
    }

    public func removeEntries(session: String, positions: [Int]) async throws(StoreError) {
        let c = main
        _ = try await worker.run { () throws(StoreError) in
            try c.query(
                "DELETE FROM entries WHERE session_id = $1 AND position = ANY($2::integer[])",
                [session, "{" + positions.map(String.init).joined(separator: ",") + "}"])
        }
    }

    public func deleteSession(_ id: String) async throws(StoreError) {
        let c = main
        try await worker.run { () throws(StoreError) in
            try c.transaction { () throws(StoreError) in
                try c.query("DELETE FROM entries WHERE session_id = $1", [id])
                try c.query("DELETE FROM sessions WHERE id = $1", [id])
            }
        }
    }

    private static func insert(_ e: TranscriptEntry, session: String, _ c: PostgresConnection) throws(StoreError) {
        try c.query(
            """
            INSERT INTO entries(session_id, position, kind, content, request_id, status, finish_reason, reason, extras)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            """,
            [
                session, "\(e.position)", e.kind.rawValue, e.content, e.requestID, e.status?.rawValue,
                e.finishReason, e.reason, e.extrasJSON,
            ])
    }

    // MARK: Turn leases

    public func tryTurnLease(session: String) async throws(StoreError) -> (any TurnLease)? {
        try await worker.run { () throws(StoreError) -> (any TurnLease)? in
            // On an error the connection is dropped, and closing it frees any lock it took. An idle
            // one may have died with a database restart unnoticed: then a fresh one tries again.
            var c: PostgresConnection
            var locked: Bool
            if let idle = self.idleLeaseConnections.popLast(),
                let got = try? idle.query(Self.lockSQL("pg_try_advisory_lock"), [session])
            {
                (c, locked) = (idle, got.first?.first == "t")
            } else {
                c = try PostgresConnection(conninfo: self.conninfo, password: self.password)
                locked = try c.query(Self.lockSQL("pg_try_advisory_lock"), [session]).first?.first == "t"
            }
            guard locked else {
                self.keepIdle(c)
                return nil
            }
            // Nobody else runs this session's turns: a response still in progress was left by a
            // server that died.
            try c.query(
                "UPDATE entries SET status = 'interrupted' WHERE session_id = $1 AND status = 'in_progress'",
                [session])
            return Lease(store: self, connection: c, session: session)
        }
    }

    /// Worker's thread only.
    private func keepIdle(_ c: PostgresConnection) {
        if idleLeaseConnections.count < Self.maxIdleLeaseConnections { idleLeaseConnections.append(c) }
    }

    struct Lease: TurnLease, @unchecked Sendable {
        let store: PostgresSessionStore
        let connection: PostgresConnection
        let session: String

        func release() async {
            let (store, c, session) = (store, connection, session)
            _ = try? await store.worker.run { () throws(StoreError) in
                // A failed unlock drops the connection, which frees the lock as surely.
                try c.query(PostgresSessionStore.lockSQL("pg_advisory_unlock"), [session])
                store.keepIdle(c)
            }
        }
    }

    // MARK: Redaction

    /// `postgres://user:secret@host/db` → `postgres://user:***@host/db`; a `password=` key of a
    /// conninfo string likewise.
    public static func redact(_ url: String) -> String {
        var s = url
        if let scheme = s.range(of: "://") {
            let rest = s[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"),
                let colon = rest[..<at].firstIndex(of: ":")
            {
                s.replaceSubrange(s.index(after: colon)..<at, with: "***")
            }
        }
        if let r = s.range(of: #"password=[^&\s]*"#, options: .regularExpression) {
            s.replaceSubrange(r, with: "password=***")
        }
        return s
    }
}
