import GenerationVocabulary
import Telemetry

/// Drives an `UpstreamScheduler` for the remote backend: a generation enters (runs at once,
/// waits, or is refused before `submit` returns), waits for its upstream in a Task that can be
/// cancelled, and leaves. Queue positions go to the generation's event handler.
final class UpstreamDispatcher: @unchecked Sendable {
    // @unchecked: every field is under `state`'s lock; continuations are resumed outside it.
    typealias Scheduler = UpstreamScheduler<UInt64>

    /// A generation that entered: its upstream now, or a number to wait with.
    struct Ticket: Sendable {
        let id: UInt64
        let upstream: Int?
        let entered: ContinuousClock.Instant
        /// Whose generation it is: fair shares between tenants in the queue.
        let tenant: String
    }

    /// How waiting ended.
    enum Admission: Sendable {
        case upstream(Int)
        case cancelled
        case failed(GenerationError)
    }

    private struct Slot {
        var onEvent: @Sendable (GenerationEvent) -> Void
        var continuation: CheckedContinuation<Admission, Never>?
        var outcome: Admission?
        var deadlineTask: Task<Void, Never>?
    }

    private struct State {
        var scheduler: Scheduler
        var nextID: UInt64 = 0
        var slots: [UInt64: Slot] = [:]
        var closed = false
    }

    private let state: Locked<State>
    /// Told the upstreams' counts and marks whenever they may have changed (metrics). Called
    /// inside the change's lock, so whoever reads `upstreams` afterwards also sees what was told
    /// and two changes are never told in the wrong order; it must not call back into the dispatcher.
    var onChange: @Sendable ([Scheduler.Upstream]) -> Void = { _ in }

    init(scheduler: Scheduler) {
        state = Locked(State(scheduler: scheduler))
    }

    var upstreams: [Scheduler.Upstream] { state.withLock { $0.scheduler.upstreams } }
    /// Running plus waiting generations.
    var count: Int { state.withLock { $0.scheduler.runningCount + $0.scheduler.waitingCount } }
    var waiting: Int { state.withLock { $0.scheduler.waitingCount } }

    /// Throws `serverBusy` when the queue is full, `upstreamUnavailable` when every upstream is
    /// down, `shuttingDown` after `close`.
    func enter(
        priority: GenerationPriority, tenant: String = "", deadline: ContinuousClock.Instant?,
        onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> Ticket {
        let now = ContinuousClock.now
        let (decision, id, moved): (Scheduler.Decision?, UInt64, [Scheduler.Action]) = state.withLock { s in
            guard !s.closed else { return (nil, 0, []) }
            s.nextID += 1
            let (decision, moved) = s.scheduler.submit(s.nextID, priority: priority, tenant: tenant)
            if case .queued = decision { s.slots[s.nextID] = Slot(onEvent: onEvent) }
            told(s)
            return (decision, s.nextID, moved)
        }
        guard let decision else { throw .shuttingDown }
        perform(moved)
        switch decision {
        case .assigned(let upstream):
            return Ticket(id: id, upstream: upstream, entered: now, tenant: tenant)
        case .queued(let position):
            onEvent(.queued(position: position))
            if let deadline {
                let task = Task { [weak self] in
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if !Task.isCancelled { self?.leaveQueue(id, as: .failed(.queueTimeout)) }
                }
                state.withLock { s in
                    if s.slots[id] != nil, s.slots[id]?.outcome == nil {
                        s.slots[id]?.deadlineTask = task
                    } else {
                        task.cancel()
                    }
                }
            }
            return Ticket(id: id, upstream: nil, entered: now, tenant: tenant)
        case .refused(let queueLength, let retryAfter):
            throw .serverBusy(queueLength: queueLength, retryAfterSeconds: retryAfter)
        case .unavailable:
            throw .upstreamUnavailable(
                "every upstream is down", retryAfterSeconds: retryAfterWhenDown)
        }
    }

    /// Seconds a client is told to wait when every upstream is down: about one health check.
    var retryAfterWhenDown = 5

    /// The ticket's upstream once it has a place; the awaiting Task's cancellation takes it out
    /// of the queue (`.cancelled`).
    func admission(_ ticket: Ticket) async -> Admission {
        if let upstream = ticket.upstream { return .upstream(upstream) }
        let id = ticket.id
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Admission, Never>) in
                let ready: Admission? = state.withLock { s in
                    guard let slot = s.slots[id] else { return .cancelled }
                    if let outcome = slot.outcome {
                        s.slots[id] = nil
                        return outcome
                    }
                    s.slots[id]?.continuation = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            leaveQueue(id, as: .cancelled)
        }
    }

    /// A generation moves off an unreachable upstream to one that can take it now, if any.
    func retarget(from upstream: Int, since start: ContinuousClock.Instant, tenant: String = "") -> Int? {
        let (next, actions) = state.withLock { s in
            let result = s.scheduler.retarget(from: upstream, held: .now - start, tenant: tenant)
            told(s)
            return result
        }
        perform(actions)
        return next
    }

    /// A generation's place on `upstream` is free.
    func release(_ upstream: Int, since start: ContinuousClock.Instant, tenant: String = "") {
        let actions = state.withLock { s in
            let actions = s.scheduler.release(upstream, held: .now - start, tenant: tenant)
            told(s)
            return actions
        }
        perform(actions)
    }

    /// The health checks marked an upstream up or down.
    func setUp(_ upstream: Int, _ up: Bool) {
        let actions = state.withLock { s in
            let actions = s.scheduler.setUp(upstream, up)
            told(s)
            return actions
        }
        perform(actions)
    }

    /// Refuses new generations and ends the waiting ones as cancelled.
    func close() {
        let ids = state.withLock { s in
            s.closed = true
            let ids = s.scheduler.removeAllWaiting()
            told(s)
            return ids
        }
        for id in ids { resolve(id, .cancelled) }
    }

    private func leaveQueue(_ id: UInt64, as outcome: Admission) {
        let moved: [Scheduler.Action]? = state.withLock { s in
            let moved = s.scheduler.remove(id)
            told(s)
            return moved
        }
        guard let moved else { return }
        resolve(id, outcome)
        perform(moved)
    }

    /// Tells `onChange` the upstreams as they are now; called inside the lock that changed them.
    private func told(_ s: State) { onChange(s.scheduler.upstreams) }

    /// Tells `onChange` the upstreams as they are (at start).
    func tell() { state.withLock { told($0) } }

    private func perform(_ actions: [Scheduler.Action]) {
        for action in actions {
            switch action {
            case .assign(let id, let upstream): resolve(id, .upstream(upstream))
            case .unavailable(let id):
                resolve(
                    id, .failed(.upstreamUnavailable("every upstream is down", retryAfterSeconds: retryAfterWhenDown)))
            case .position(let id, let position):
                if let onEvent = state.withLock({ $0.slots[id]?.onEvent }) { onEvent(.queued(position: position)) }
            }
        }
    }

    /// Hands the outcome to the waiting Task, or keeps it until the Task asks.
    private func resolve(_ id: UInt64, _ outcome: Admission) {
        let (continuation, task): (CheckedContinuation<Admission, Never>?, Task<Void, Never>?) = state.withLock { s in
            guard var slot = s.slots[id] else { return (nil, nil) }
            let task = slot.deadlineTask
            if let c = slot.continuation {
                s.slots[id] = nil
                return (c, task)
            }
            slot.outcome = outcome
            slot.deadlineTask = nil
            s.slots[id] = slot
            return (nil, task)
        }
        task?.cancel()
        continuation?.resume(returning: outcome)
    }
}
