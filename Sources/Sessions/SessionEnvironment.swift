import Backend
import Telemetry
import Timekeeping

/// What every session of a server shares: the store, the KV-cache budget, limits, telemetry,
/// and the hooks tests use to make races deterministic.
public struct SessionEnvironment: Sendable {
    /// SQLite (`TranscriptStore`) or PostgreSQL (`PostgresSessionStore`).
    public var store: any SessionStore
    public var caches: KVCacheBudget
    /// Most requests waiting in one session (`max_session_queue`).
    public var maxQueue: Int
    /// The completion budget's default and limits, the same value the stateless routes check against.
    public var limits: GenerationLimits
    public var logger: Logger
    public var metrics: Metrics
    public var hooks: SessionHooks
    /// Decides when a waiting turn's deadline has passed, in the session's queue or while it
    /// waits for the shared store's lease (the system's time; tests pass a manual one).
    public var clock: any TimeSource = .system

    public init(
        store: any SessionStore, caches: KVCacheBudget, maxQueue: Int, limits: GenerationLimits, logger: Logger,
        metrics: Metrics, hooks: SessionHooks = SessionHooks()
    ) {
        self.store = store
        self.caches = caches
        self.maxQueue = maxQueue
        self.limits = limits
        self.logger = logger
        self.metrics = metrics
        self.hooks = hooks
    }
}
