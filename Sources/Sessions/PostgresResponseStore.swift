import Foundation

/// Stored responses in PostgreSQL (`store_url`), shared by every replica on one database: a
/// response created on one replica is retrieved, listed, continued and deleted through any other.
/// All libpq calls run on one dedicated thread (`BlockingWorker`), with a connection of its own.
///
/// A background response runs on the replica that accepted it, which records its `replica_id`
/// and its process's `instance` (a UUID drawn at each start) with the row. To tell a dead
/// process from a live one, each holds an advisory lock on its instance (namespace
/// `livenessNamespace`) on a connection kept for that alone for its whole life: PostgreSQL frees
/// it when that connection closes, so when a replica dies (even `kill -9`) anyone can take the
/// lock, and an unfinished response of that instance is then known to be orphaned and is marked
/// `failed` + `interrupted` (at start-up, and whenever it is read). The live background
/// responses of another process are never touched, whatever the replica ids (two replicas left
/// with the default, the same host name, do not fail each other's).
public final class PostgresResponseStore: ResponseStoring, @unchecked Sendable {
    public var isShared: Bool { true }
    public let interruptedOnOpen: [String]
    /// This replica's name, written with each response it saves.
    public let replica: String
    /// This process's liveness name (a fresh UUID), written with each response it saves.
    let instance: String
    private let worker: BlockingWorker
    /// Worker's thread only.
    private let main: PostgresConnection
    /// Holds this replica's liveness lock; worker's thread only.
    private let liveness: PostgresConnection

    /// The first key of the liveness locks (the second is the instance's hash); the session
    /// leases use 15_015 and the migrations 15_016.
    static let livenessNamespace = 15_017
    private static let unfinished = "status IN ('queued', 'in_progress')"
    private static let columns = "id, owner, created, status, interrupted, replica_id, payload, instance"

    /// Connects, applies the schema migrations, takes this process's liveness lock, and marks
    /// `failed` + `interrupted` the unfinished responses of every dead process (this replica's
    /// earlier lives included). An unreachable database is an error here.
    public static func open(url: String, password: String?, replica: String) throws(StoreError)
        -> PostgresResponseStore
    {
        try PostgresResponseStore(url: url, password: password, replica: replica)
    }

    private init(url: String, password: String?, replica: String) throws(StoreError) {
        self.replica = replica
        let instance = UUID().uuidString.lowercased()
        self.instance = instance
        let worker = BlockingWorker(name: "inferd-postgres-responses")
        self.worker = worker
        let redacted = PostgresSessionStore.redact(url)
        do {
            let (main, liveness) = try worker.runBlocking { () throws(StoreError) in
                (
                    try PostgresConnection(conninfo: url, password: password),
                    try PostgresConnection(conninfo: url, password: password)
                )
            }
            self.main = main
            self.liveness = liveness
            try worker.runBlocking { () throws(StoreError) in try PostgresSchema.migrate(main) }
            try worker.runBlocking { () throws(StoreError) in try Self.takeLiveness(liveness, instance: instance) }
            interruptedOnOpen = try worker.runBlocking { () throws(StoreError) in try Self.recoverOrphans(main) }
        } catch {
            worker.stop()
            throw StoreError(
                "PostgreSQL response store \(redacted) is unusable: \(error)", unavailable: error.unavailable)
        }
    }

    deinit { worker.stop() }

    // MARK: Liveness

    static func lockSQL(_ function: String) -> String {
        "SELECT \(function)(\(livenessNamespace), hashtext($1))"
    }

    /// Takes `instance`'s liveness lock on `c`. Only a hash collision with a live process can
    /// refuse it; then this process's responses would look alive after it dies, so it stops.
    private static func takeLiveness(_ c: PostgresConnection, instance: String) throws(StoreError) {
        guard try c.query(lockSQL("pg_try_advisory_lock"), [instance]).first?.first == "t" else {
            throw StoreError("the liveness lock of instance \(instance) is held by another process")
        }
    }

    /// Whether `c` holds `instance`'s liveness lock now (a reconnected connection has lost it).
    private static func holdsLiveness(_ c: PostgresConnection, instance: String) throws(StoreError) -> Bool {
        try c.query(
            """
            SELECT EXISTS(SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
                AND granted AND objsubid = 2 AND classid = \(livenessNamespace)::oid
                AND objid = (hashtext($1)::bigint & 4294967295)::oid)
            """, [instance]
        ).first?.first == "t"
    }

    /// Before a write that says "this replica runs it": the liveness lock is still held (taken
    /// again after the connection was lost and reopened).
    private func ensureLiveness() throws(StoreError) {
        // A connection the database dropped fails this check once, and reconnects to take it again.
        if (try? Self.holdsLiveness(liveness, instance: instance)) != true {
            try Self.takeLiveness(liveness, instance: instance)
        }
    }

    /// Marks failed the unfinished responses of every process whose liveness lock is free (dead);
    /// their ids, oldest first.
    private static func recoverOrphans(_ c: PostgresConnection) throws(StoreError) -> [String] {
        let instances = try c.query("SELECT DISTINCT instance FROM responses WHERE \(unfinished)")
        var ids: [(created: Int, seq: Int, id: String)] = []
        for row in instances {
            if let owner = row[0] {
                ids += try failIfDead(c, owner: owner, id: nil)
            } else {
                ids += try failUnfinished(c, owner: nil, id: nil)
            }
        }
        return ids.sorted { ($0.created, $0.seq) < ($1.created, $1.seq) }.map(\.id)
    }

    /// Fails instance `owner`'s unfinished responses (only `id` when given) if `owner` holds no
    /// liveness lock.
    private static func failIfDead(_ c: PostgresConnection, owner: String, id: String?) throws(StoreError) -> [(
        created: Int, seq: Int, id: String
    )] {
        guard try c.query(lockSQL("pg_try_advisory_lock"), [owner]).first?.first == "t" else { return [] }
        // Holding the dead replica's lock meanwhile: a replica of that name starting now waits.
        defer { _ = try? c.query(lockSQL("pg_advisory_unlock"), [owner]) }
        return try failUnfinished(c, owner: owner, id: id)
    }

    private static func failUnfinished(_ c: PostgresConnection, owner: String?, id: String?) throws(StoreError)
        -> [(created: Int, seq: Int, id: String)]
    {
        let rows = try c.query(
            """
            UPDATE responses SET status = 'failed', interrupted = true
            WHERE \(unfinished) AND instance IS NOT DISTINCT FROM $1 AND ($2::text IS NULL OR id = $2)
            RETURNING created, seq, id
            """, [owner, id])
        return rows.map { (Int($0[0] ?? "") ?? 0, Int($0[1] ?? "") ?? 0, $0[2] ?? "") }
    }

    // MARK: Responses

    public var count: Int {
        let c = main
        return
            (try? worker.runBlocking { () throws(StoreError) in
                Int(try c.query("SELECT COUNT(*) FROM responses").first?.first.flatMap { $0 } ?? "") ?? 0
            }) ?? 0
    }

    public func save(_ r: StoredResponse) async throws(StoreError) {
        let (c, replica, instance) = (main, replica, instance)
        let running = StoredResponse.unfinishedStatuses.contains(r.status)
        try await worker.run { () throws(StoreError) in
            if running { try self.ensureLiveness() }
            try c.query(
                """
                INSERT INTO responses(id, owner, created, status, interrupted, replica_id, payload, instance)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                ON CONFLICT(id) DO UPDATE SET status = excluded.status, interrupted = excluded.interrupted,
                    replica_id = excluded.replica_id, payload = excluded.payload, instance = excluded.instance
                """,
                [
                    r.id, r.owner, "\(r.createdAt)", r.status, r.interrupted ? "true" : "false", replica, r.payload,
                    instance,
                ])
        }
    }

    public func load(_ id: String) async throws(StoreError) -> StoredResponse? {
        let (c, instance) = (main, instance)
        return try await worker.run { () throws(StoreError) -> StoredResponse? in
            guard var row = try c.query("SELECT \(Self.columns) FROM responses WHERE id = $1", [id]).first else {
                return nil
            }
            if StoredResponse.unfinishedStatuses.contains(row[3] ?? ""), let owner = row[7], owner != instance,
                try !Self.failIfDead(c, owner: owner, id: id).isEmpty
            {
                row = try c.query("SELECT \(Self.columns) FROM responses WHERE id = $1", [id]).first ?? row
            }
            return StoredResponse(
                id: row[0] ?? id, owner: row[1], createdAt: Int(row[2] ?? "") ?? 0, status: row[3] ?? "failed",
                payload: row[6] ?? "{}", interrupted: row[4] == "t", replica: row[5])
        }
    }

    @discardableResult
    public func delete(_ id: String) async throws(StoreError) -> Bool {
        let c = main
        return try await worker.run { () throws(StoreError) in
            !(try c.query("DELETE FROM responses WHERE id = $1 RETURNING 1", [id]).isEmpty)
        }
    }

    @discardableResult
    public func prune(olderThan cutoff: Int) async throws(StoreError) -> [String] {
        let c = main
        return try await worker.run { () throws(StoreError) in
            try c.query(
                "DELETE FROM responses WHERE status NOT IN ('queued', 'in_progress') AND created < $1 RETURNING created, seq, id",
                ["\(cutoff)"]
            ).map { (Int($0[0] ?? "") ?? 0, Int($0[1] ?? "") ?? 0, $0[2] ?? "") }
                .sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        }
    }

    public func holdings(of owner: String?) async throws(StoreError) -> ResponseHoldings {
        let c = main
        return try await worker.run { () throws(StoreError) in
            let row = try c.query(
                """
                SELECT COUNT(*), COUNT(*) FILTER (WHERE owner IS NOT DISTINCT FROM $1),
                    COUNT(*) FILTER (WHERE owner IS NOT DISTINCT FROM $1 AND \(Self.unfinished)) FROM responses
                """, [owner]
            ).first
            func n(_ i: Int) -> Int { Int((row?[i]).flatMap { $0 } ?? "") ?? 0 }
            return ResponseHoldings(owned: n(1), ownedUnfinished: n(2), total: n(0))
        }
    }

    @discardableResult
    public func evictOldestFinished(of owner: String?, count: Int) async throws(StoreError) -> [String] {
        guard count > 0 else { return [] }
        let c = main
        return try await worker.run { () throws(StoreError) in
            // Another replica evicting for the same owner at once deletes the same oldest rows:
            // never more than asked, and never another owner's.
            try c.query(
                """
                DELETE FROM responses WHERE id IN (
                    SELECT id FROM responses WHERE owner IS NOT DISTINCT FROM $1
                        AND status NOT IN ('queued', 'in_progress') ORDER BY created, seq LIMIT $2)
                RETURNING created, seq, id
                """, [owner, "\(count)"]
            ).map { (Int($0[0] ?? "") ?? 0, Int($0[1] ?? "") ?? 0, $0[2] ?? "") }
                .sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        }
    }

    // MARK: Cancel requests

    public func requestCancel(_ id: String) async throws(StoreError) -> Bool {
        let c = main
        return try await worker.run { () throws(StoreError) in
            !(try c.query(
                "UPDATE responses SET cancel_requested = true WHERE id = $1 AND \(Self.unfinished) RETURNING 1", [id]
            ).isEmpty)
        }
    }

    public func isCancelRequested(_ id: String) async throws(StoreError) -> Bool {
        let c = main
        return try await worker.run { () throws(StoreError) in
            try c.query("SELECT cancel_requested FROM responses WHERE id = $1", [id]).first?.first == "t"
        }
    }

    // MARK: Conversations' metadata

    public func saveConversationMetadata(_ id: String, _ payload: String) async throws(StoreError) {
        let c = main
        _ = try await worker.run { () throws(StoreError) in
            try c.query(
                """
                INSERT INTO conversation_metadata(id, payload) VALUES ($1, $2)
                ON CONFLICT(id) DO UPDATE SET payload = excluded.payload
                """, [id, payload])
        }
    }

    public func conversationMetadata(_ id: String) async throws(StoreError) -> String? {
        let c = main
        return try await worker.run { () throws(StoreError) in
            try c.query("SELECT payload FROM conversation_metadata WHERE id = $1", [id]).first?.first ?? nil
        }
    }

    public func deleteConversationMetadata(_ id: String) async throws(StoreError) {
        let c = main
        _ = try await worker.run { () throws(StoreError) in
            try c.query("DELETE FROM conversation_metadata WHERE id = $1", [id])
        }
    }
}
