import Engine
import Telemetry

extension ServerConfiguration {
    /// The engine's capacity, queue and preemption settings.
    public var admissionPolicy: AdmissionPolicy {
        AdmissionPolicy(
            maxActiveSequences: maxActiveSequences, maxQueue: maxQueue,
            preemptAfter: .milliseconds(preemptAfterMs))
    }
}
