import Engine
import Telemetry

extension ServerConfiguration {
    /// The engine's capacity, queue and preemption settings.
    public var admissionPolicy: AdmissionPolicy {
        AdmissionPolicy(
            maxActiveSequences: maxActiveSequences, maxQueue: maxQueue,
            preemptAfter: .milliseconds(preemptAfterMs))
    }

    /// `per_key_max_generations` as applied: -1 is half the engine's places (running and
    /// waiting, rounded down, at least 1), so one key can never take every place; 0 is no limit.
    /// A remote backend's places are `max_active_sequences` per upstream, so half of this count is
    /// at most half of its places too.
    public var effectivePerKeyMaxGenerations: Int {
        perKeyMaxGenerations >= 0 ? perKeyMaxGenerations : max(1, (maxActiveSequences + maxQueue) / 2)
    }
}
