import Engine
import HTTPServer
import Telemetry

/// The request fields every generation endpoint accepts for the engine's queue, checked once:
/// `priority` (`interactive` or `background`, parsed where the body is read) and `timeout_seconds` (covers waiting, the prompt
/// and the generation).
struct AdmissionFields: Sendable, Equatable {
    static let maxTimeoutSeconds = 86_400.0

    var priority = GenerationPriority.interactive
    var timeoutSeconds: Double?

    init() {}

    init(priority: GenerationPriority?, timeoutSeconds: Double?) throws(HTTPError) {
        self.priority = priority ?? .interactive
        if let t = timeoutSeconds {
            guard t.isFinite, t > 0, t <= Self.maxTimeoutSeconds else {
                throw .badRequest(
                    "timeout_seconds must be a number of seconds above 0 and at most \(Int(Self.maxTimeoutSeconds)), got \(t)",
                    code: .invalidRequest, param: "timeout_seconds")
            }
        }
        self.timeoutSeconds = timeoutSeconds
    }

    /// When a request that arrived at `arrival` must be over; nil without a timeout.
    func deadline(from arrival: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        timeoutSeconds.map { arrival + .milliseconds(Int64(($0 * 1000).rounded(.up))) }
    }
}
