import Engine
import Telemetry

/// One generation of the wrapped backend serving every identical request that subscribed to it
/// while it ran.
///
/// It is awaited in a Task this object owns, like a session owns its turn's Task: no HTTP
/// request owns it, because any of them may leave while the others stay. Only `leave` cancels
/// it, when the last subscriber goes; that subscriber stays subscribed until the backend has
/// stopped, so it still returns only once nothing runs for it (rule 3). A subscriber that leaves
/// while others remain is finished at once as cancelled.
final class SharedGeneration: Sendable {
    struct Snapshot: Sendable {
        /// Counts snapshots from 1, so a subscriber can tell newer from older.
        var number: Int
        var content: String
        var completionTokens: Int
    }

    /// Everything a subscriber needs to be up to date: snapshots hold the whole text so far, so
    /// the latest one stands for all before it.
    struct Progress: Sendable {
        var prompt: GenerationEvent?
        var snapshot: Snapshot?
    }

    private struct State {
        var subscribers: [SingleFlightSubscriber]
        var progress = Progress()
        /// Nobody may join any more: the last subscriber left, or the generation ended.
        var closed = false
        var ended = false
        var task: Task<Void, Never>?
        var cancelRequested = false
    }

    private enum Departure {
        case alreadyGone
        case aloneAsCancelled
        case lastStopsTheGeneration(Task<Void, Never>?)
    }

    /// The label (request id) of the request that started it.
    let leaderLabel: String
    private let state: Locked<State>

    init(leaderLabel: String, first: SingleFlightSubscriber) {
        self.leaderLabel = leaderLabel
        state = Locked(State(subscribers: [first]))
    }

    /// Hands `request` to `backend` now (so a refusal is known at once, and a backend that starts
    /// at submit starts now) and awaits it in a Task of its own; `onEnd` runs once it has ended,
    /// before subscribers are told. A refused submission ends it at once and is rethrown.
    func start(
        _ request: BackendRequest, on backend: any GenerationBackend, onEnd: @escaping @Sendable () -> Void
    ) throws(GenerationError) {
        let pending: PendingGeneration
        do {
            pending = try backend.submit(request) { [self] event in publish(event) }
        } catch {
            end(.failure(error), onEnd: onEnd)
            throw error
        }
        let task = Task {
            let outcome: Result<GenerationResult, GenerationError>
            do throws(GenerationError) {
                outcome = .success(try await pending.result())
            } catch {
                outcome = .failure(error)
            }
            end(outcome, onEnd: onEnd)
        }
        let cancelNow = state.withLock { s in
            s.task = task
            return s.cancelRequested
        }
        if cancelNow { task.cancel() }
    }

    /// Adds a subscriber unless it is too late; returns the progress to replay to it.
    func join(_ subscriber: SingleFlightSubscriber) -> Progress? {
        state.withLock { s in
            guard !s.closed else { return nil }
            s.subscribers.append(subscriber)
            return s.progress
        }
    }

    /// A subscriber cancels. Harmless when it already finished.
    func leave(_ subscriber: SingleFlightSubscriber) {
        let departure = state.withLock { s -> Departure in
            guard !s.ended, let index = s.subscribers.firstIndex(where: { $0 === subscriber }) else {
                return .alreadyGone
            }
            if s.subscribers.count > 1 {
                s.subscribers.remove(at: index)
                return .aloneAsCancelled
            }
            s.closed = true
            s.cancelRequested = true
            return .lastStopsTheGeneration(s.task)
        }
        switch departure {
        case .alreadyGone: break
        case .aloneAsCancelled: subscriber.finishCancelled()
        case .lastStopsTheGeneration(let task): task?.cancel()
        }
    }

    /// Called on the backend's thread for every event.
    private func publish(_ event: GenerationEvent) {
        if case .queued(let position) = event {
            for subscriber in state.withLock({ $0.subscribers }) { subscriber.deliverQueued(position: position) }
            return
        }
        let (progress, subscribers) = state.withLock { s in
            switch event {
            case .started:
                s.progress.prompt = event
            case .snapshot(let content, let completionTokens):
                let number = (s.progress.snapshot?.number ?? 0) + 1
                s.progress.snapshot = Snapshot(number: number, content: content, completionTokens: completionTokens)
            case .queued:
                break
            }
            return (s.progress, s.subscribers)
        }
        // Outside the lock: `onEvent` may cancel its own request, which comes back to `leave`.
        for subscriber in subscribers { subscriber.deliver(progress) }
    }

    private func end(_ outcome: Result<GenerationResult, GenerationError>, onEnd: @Sendable () -> Void) {
        let subscribers = state.withLock { s in
            s.ended = true
            s.closed = true
            s.task = nil
            defer { s.subscribers.removeAll() }
            return s.subscribers
        }
        onEnd()
        for subscriber in subscribers { subscriber.finish(outcome) }
    }
}
