/// The PostgreSQL schema as numbered migrations. A database records the versions applied in
/// `inferd_schema_migrations`; start-up applies the missing ones in order, in one transaction
/// under an advisory lock (replicas starting together apply each once). Never edit a released
/// migration: add the next number.
enum PostgresSchema {
    static let migrations: [(version: Int, statements: [String])] = [
        (
            1,
            [
                """
                CREATE TABLE sessions(
                    id TEXT PRIMARY KEY, created BIGINT NOT NULL, on_busy TEXT NOT NULL, options TEXT, owner TEXT)
                """,
                """
                CREATE TABLE entries(
                    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                    position INTEGER NOT NULL, kind TEXT NOT NULL, content TEXT NOT NULL,
                    request_id TEXT, status TEXT, finish_reason TEXT, reason TEXT,
                    PRIMARY KEY(session_id, position))
                """,
                "CREATE INDEX entries_in_progress ON entries(session_id) WHERE status = 'in_progress'",
            ]
        ),
        (
            // Stored Responses-API responses (`PostgresResponseStore`): `seq` orders responses
            // created in the same second; `replica_id` names the replica running an unfinished one
            // and `instance` its process (whose liveness lock tells whether it still runs);
            // `cancel_requested` is how a cancel sent to another replica reaches it.
            2,
            [
                """
                CREATE TABLE responses(
                    id TEXT PRIMARY KEY, seq BIGSERIAL, owner TEXT, created BIGINT NOT NULL, status TEXT NOT NULL,
                    interrupted BOOLEAN NOT NULL DEFAULT false, replica_id TEXT,
                    instance TEXT, cancel_requested BOOLEAN NOT NULL DEFAULT false, payload TEXT NOT NULL)
                """,
                "CREATE INDEX responses_created ON responses(created, seq)",
                "CREATE INDEX responses_unfinished ON responses(instance) WHERE status IN ('queued', 'in_progress')",
                "CREATE TABLE conversation_metadata(id TEXT PRIMARY KEY, payload TEXT NOT NULL)",
            ]
        ),
        (
            // Tool calls, the call a tool result answers and reasoning (`TranscriptEntry.Extras`).
            3,
            ["ALTER TABLE entries ADD COLUMN extras TEXT"]
        ),
    ]

    static var latest: Int { migrations.last?.version ?? 0 }

    /// Applies what is missing; a database newer than this build is an error (never downgraded).
    static func migrate(_ c: PostgresConnection) throws(StoreError) {
        try c.transaction { () throws(StoreError) in
            try c.query("SELECT pg_advisory_xact_lock(\(PostgresSessionStore.migrationLock), 0)")
            try c.query(
                """
                CREATE TABLE IF NOT EXISTS inferd_schema_migrations(
                    version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """)
            let current =
                Int(try c.query("SELECT COALESCE(MAX(version), 0) FROM inferd_schema_migrations")[0][0] ?? "")
                ?? 0
            guard current <= latest else {
                throw StoreError(
                    "the database's schema is version \(current), newer than this inferd knows (\(latest)); upgrade inferd"
                )
            }
            for m in migrations where m.version > current {
                for statement in m.statements { try c.query(statement) }
                try c.query("INSERT INTO inferd_schema_migrations(version) VALUES ($1)", ["\(m.version)"])
            }
        }
    }
}
