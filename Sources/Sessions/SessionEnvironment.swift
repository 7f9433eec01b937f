import Synchronization
import Telemetry

/// What every session of a server shares: the store, the KV-cache budget, limits, telemetry,
/// and the hooks tests use to make races deterministic.
public struct SessionEnvironment: Sendable {
    public var store: TranscriptStore
    public var caches: KVCacheBudget
    /// Most requests waiting in one session (`max_session_queue`).
    public var maxQueue: Int
    /// max_tokens when a request gives none (capped by what fits).
    public var defaultMaxTokens: Int
    public var logger: Logger
    public var metrics: Metrics
    public var hooks: SessionHooks

    public init(
        store: TranscriptStore, caches: KVCacheBudget, maxQueue: Int, defaultMaxTokens: Int, logger: Logger,
        metrics: Metrics, hooks: SessionHooks = SessionHooks()
    ) {
        self.store = store
        self.caches = caches
        self.maxQueue = maxQueue
        self.defaultMaxTokens = defaultMaxTokens
        self.logger = logger
        self.metrics = metrics
        self.hooks = hooks
    }
}

/// Injected pauses around the moment a turn's end is recorded (tests only; nil in production).
public final class SessionHooks: Sendable {
    public typealias Pause = @Sendable (_ requestID: String) async -> Void
    private let before = Locked<Pause?>(nil)
    private let after = Locked<Pause?>(nil)

    public init() {}

    /// Runs after the engine returned and before the session records how the turn ended.
    public var beforeRecord: Pause? {
        get { before.withLock { $0 } }
        set { before.withLock { $0 = newValue } }
    }
    /// Runs after the session recorded the end, before the requester is told.
    public var afterRecord: Pause? {
        get { after.withLock { $0 } }
        set { after.withLock { $0 = newValue } }
    }
}

/// Counts generations running at once for one session, measured around the engine call itself
/// (not from the session's own bookkeeping), so an overlap would show even if the queue logic
/// were wrong.
public final class GenerationProbe: Sendable {
    private let current = Atomic<Int>(0)
    private let peak = Atomic<Int>(0)
    private let total = Atomic<Int>(0)

    public init() {}

    func enter() {
        let now = current.add(1, ordering: .acquiringAndReleasing).newValue
        total.add(1, ordering: .relaxed)
        var seen = peak.load(ordering: .acquiring)
        while now > seen {
            let (exchanged, original) = peak.compareExchange(
                expected: seen, desired: now, ordering: .acquiringAndReleasing)
            if exchanged { break }
            seen = original
        }
    }

    func leave() { current.subtract(1, ordering: .acquiringAndReleasing) }

    /// The most generations this session ever had in the engine at once (must be ≤ 1).
    public var maxConcurrent: Int { peak.load(ordering: .acquiring) }
    public var generations: Int { total.load(ordering: .acquiring) }
}
