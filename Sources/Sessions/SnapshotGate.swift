import GenerationVocabulary
import Telemetry

/// Forwards a turn's snapshots until the session records a stop, and remembers the last one
/// forwarded. Closing and forwarding take the same lock, so "the last snapshot sent" is exact:
/// after `close()` nothing more reaches the client, and what `close()` returns is what it saw.
final class SnapshotGate: Sendable {
    private struct State {
        var open = true
        var last = ""
        var published = 0
    }

    private let state = Locked(State())
    private let forward: @Sendable (GenerationEvent) -> Void

    init(forward: @escaping @Sendable (GenerationEvent) -> Void) { self.forward = forward }

    /// Passes an event on unless closed. Called on the engine's thread; `forward` must not block.
    func publish(_ event: GenerationEvent) {
        state.withLock { s in
            guard s.open else { return }
            if case .snapshot(let content, _) = event {
                s.last = content
                s.published += 1
            }
            forward(event)
        }
    }

    /// Stops forwarding; returns the last snapshot forwarded ("" if none).
    @discardableResult
    func close() -> String {
        state.withLock { s in
            s.open = false
            return s.last
        }
    }

    var lastPublished: String { state.withLock { $0.last } }
    var publishedCount: Int { state.withLock { $0.published } }
}
