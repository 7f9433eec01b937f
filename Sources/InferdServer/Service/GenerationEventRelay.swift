import Engine
import Telemetry

/// Carries a generation's events to a stream that does not exist yet: a streamed request is
/// submitted to the engine before its response starts (so a full queue can still be a 503),
/// and its events, `queued` ones first, may come before the stream's producer runs. They are
/// kept until `attach`, then passed on in order; the lock is held while passing one on, so
/// order holds whichever thread reports.
final class GenerationEventRelay: Sendable {
    private struct State {
        var pending: [GenerationEvent] = []
        var sink: (@Sendable (GenerationEvent) -> Void)?
    }

    private let state = Locked(State())

    /// For the engine: called on its thread (or a cancelling one); never blocks for long.
    func forward(_ event: GenerationEvent) {
        state.withLock { s in
            if let sink = s.sink {
                sink(event)
            } else {
                s.pending.append(event)
            }
        }
    }

    /// Sends what was kept, then everything that follows, to `sink`.
    func attach(_ sink: @escaping @Sendable (GenerationEvent) -> Void) {
        state.withLock { s in
            for event in s.pending { sink(event) }
            s.pending.removeAll()
            s.sink = sink
        }
    }
}
