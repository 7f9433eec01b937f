import Engine
import Telemetry

/// One request's place in a shared generation, held by the closure of its `PendingGeneration`:
/// awaiting it waits for the subscriber's outcome, the awaiting Task's cancellation leaves the
/// generation, and so does letting go of it unawaited (a requester that failed before awaiting),
/// so nothing runs for nobody. Leaving after the outcome is known does nothing.
final class SingleFlightMembership: Sendable {
    /// The subscriber's outcome, handed over once by `SingleFlightSubscriber`'s `onFinish`.
    final class Outcome: Sendable {
        private struct State {
            var outcome: Result<GenerationResult, GenerationError>?
            var waiter: CheckedContinuation<Result<GenerationResult, GenerationError>, Never>?
        }
        private let state = Locked(State())

        func fulfil(_ outcome: Result<GenerationResult, GenerationError>) {
            let waiter = state.withLock { s in
                s.outcome = outcome
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: outcome)
        }

        func wait() async -> Result<GenerationResult, GenerationError> {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s in
                    if s.outcome == nil { s.waiter = continuation }
                    return s.outcome
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }

    private let generation: SharedGeneration
    private let subscriber: SingleFlightSubscriber
    private let outcome: Outcome

    init(generation: SharedGeneration, subscriber: SingleFlightSubscriber, outcome: Outcome) {
        self.generation = generation
        self.subscriber = subscriber
        self.outcome = outcome
    }

    /// The shared outcome (marked `sharedFrom` for a joiner), or this request's own cancelled
    /// result when it left while others stayed.
    func result() async throws(GenerationError) -> GenerationResult {
        try await withTaskCancellationHandler {
            await outcome.wait()
        } onCancel: {
            leave()
        }.get()
    }

    func leave() { generation.leave(subscriber) }

    deinit { generation.leave(subscriber) }
}
