import GenerationVocabulary
import Telemetry

/// Keeps idle sessions' KV caches under one memory budget, dropping the least recently used
/// first. A session checks its cache out for a turn (it then counts as in use and is never
/// dropped) and checks it back in afterwards. A dropped cache is simply gone: the session's
/// next turn rebuilds it from the transcript, which is the truth.
public final class KVCacheBudget: Sendable {
    private struct Idle {
        var sequence: any PredictorSequence
        var bytes: Int
        var lastUsed: UInt64
    }

    private struct State {
        var idle: [String: Idle] = [:]
        var inUse: [String: Int] = [:]
        var clock: UInt64 = 0
        var evictions = 0
    }

    public let budgetBytes: Int
    private let state = Locked(State())

    public init(budgetBytes: Int) { self.budgetBytes = budgetBytes }

    /// Takes a session's cache for a turn; nil when it has none (never made, or dropped).
    public func checkOut(_ owner: String, reservingBytes bytes: Int) -> (any PredictorSequence)? {
        state.withLock { s in
            let entry = s.idle.removeValue(forKey: owner)
            s.inUse[owner] = entry?.bytes ?? bytes
            return entry?.sequence
        }
    }

    /// Returns a cache after a turn. Past the budget, idle caches are dropped, oldest use first
    /// (this one too if it alone is too big). Returns the owners whose caches were dropped.
    @discardableResult
    public func checkIn(_ owner: String, sequence: any PredictorSequence, bytes: Int) -> [String] {
        state.withLock { s in
            s.inUse[owner] = nil
            s.clock += 1
            s.idle[owner] = Idle(sequence: sequence, bytes: bytes, lastUsed: s.clock)
            var dropped: [String] = []
            while Self.total(s) > budgetBytes, let oldest = s.idle.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                s.idle[oldest.key] = nil
                s.evictions += 1
                dropped.append(oldest.key)
            }
            return dropped
        }
    }

    /// Forgets a session's cache (the session was deleted, or its turn failed).
    public func drop(_ owner: String) {
        state.withLock { s in
            s.idle[owner] = nil
            s.inUse[owner] = nil
        }
    }

    public func hasCache(_ owner: String) -> Bool { state.withLock { $0.idle[owner] != nil } }
    public var usedBytes: Int { state.withLock { Self.total($0) } }
    public var evictions: Int { state.withLock { $0.evictions } }

    private static func total(_ s: State) -> Int {
        s.idle.values.reduce(0) { $0 + $1.bytes } + s.inUse.values.reduce(0, +)
    }
}
