import Backend
import Foundation
import Sessions
import Telemetry
import Timekeeping

/// Opens what a server keeps: the sessions' store (`store_url`'s PostgreSQL, else `data_dir`'s
/// SQLite) with every session restored, and the stored responses' store beside it.
public enum StoreFactory {
    /// The session manager over an in-memory store (nothing survives a restart).
    static func inMemorySessions(
        configuration c: ServerConfiguration, logger: Logger, metrics: Metrics, clock: any TimeSource = .system
    ) -> SessionManager {
        // A fresh in-memory store holds nothing to load, so this cannot fail.
        try! SessionManager(
            environment: environment(c, store: TranscriptStore.inMemory(), logger, metrics, clock: clock))
    }

    /// Opens the session store and restores every session; a bad or unreachable database is an error here.
    public static func openSessions(
        configuration c: ServerConfiguration, logger: Logger, metrics: Metrics, clock: any TimeSource = .system
    ) throws(StoreError) -> SessionManager {
        let store = try openStore(c)
        let manager = try SessionManager(environment: environment(c, store: store, logger, metrics, clock: clock))
        logger.info(
            "sessions restored",
            ["count": "\(manager.count)", "interrupted": "\(store.interruptedOnOpen)", "store": storeName(c)])
        return manager
    }

    static func environment(
        _ c: ServerConfiguration, store: any SessionStore, _ logger: Logger, _ metrics: Metrics,
        clock: any TimeSource
    ) -> SessionEnvironment {
        var environment = SessionEnvironment(
            store: store, caches: KVCacheBudget(budgetBytes: c.kvCacheMiB << 20), maxQueue: c.maxSessionQueue,
            limits: c.generationLimits, logger: logger, metrics: metrics)
        environment.clock = clock
        return environment
    }

    static func openStore(_ c: ServerConfiguration) throws(StoreError) -> any SessionStore {
        guard !c.storeURL.isEmpty else { return try TranscriptStore.open(dataDir: c.dataDir) }
        return try PostgresSessionStore.open(url: c.storeURL, password: try storePassword(c))
    }

    /// The stored responses' store: `store_url`'s PostgreSQL (shared by the replicas), else the
    /// sessions' SQLite file in `data_dir`.
    public static func openResponseStore(_ c: ServerConfiguration) throws(StoreError) -> any ResponseStoring {
        guard !c.storeURL.isEmpty else { return try ResponseStore.open(dataDir: c.dataDir) }
        return try PostgresResponseStore.open(
            url: c.storeURL, password: try storePassword(c), replica: c.effectiveReplicaId)
    }

    /// The PostgreSQL password from `store_password_file`, if set (else the URL's or `PGPASSWORD`).
    static func storePassword(_ c: ServerConfiguration) throws(StoreError) -> String? {
        guard !c.storePasswordFile.isEmpty else { return nil }
        do {
            return try String(contentsOfFile: c.storePasswordFile, encoding: .utf8).trimmingCharacters(in: .newlines)
        } catch {
            throw StoreError("cannot read store_password_file \(c.storePasswordFile): \(error.localizedDescription)")
        }
    }

    /// Where sessions live, as logs may show it (never a password).
    public static func storeName(_ c: ServerConfiguration) -> String {
        c.storeURL.isEmpty ? "sqlite:\(c.dataDir)" : PostgresSessionStore.redact(c.storeURL)
    }
}
