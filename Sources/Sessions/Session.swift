import Backend
import Cancellation
import Foundation
import GenerationVocabulary

/// One conversation: its transcript, its queue and its KV cache. Requests to one session never
/// overlap. Actor isolation alone would not ensure that (another call runs while one is
/// suspended at an `await`), so the queue, the active request's id and the handle of the Task
/// running its generation are explicit state here, and only this actor cancels that Task.
public actor Session {
    public nonisolated let id: String
    public nonisolated let created: Int
    public nonisolated let onBusy: BusyPolicy
    /// Opaque default options (the HTTP layer's JSON).
    public nonisolated let options: String?
    /// Who created it (see `StoredSession.owner`); fixed for the session's life.
    public nonisolated let owner: String?
    /// Counts generations in the engine at once for this session (tests assert it stays ≤ 1).
    public nonisolated let probe = GenerationProbe()
    let env: SessionEnvironment
    /// Told when a request admitted here ends, however it ends (the manager's request index).
    nonisolated let requestEnded: @Sendable (String) -> Void

    var entries: [TranscriptEntry]
    var nextPosition: Int
    var queue: SessionQueue
    /// Requests waiting or active here.
    var turns: [String: Turn] = [:]
    /// How recent requests ended, for late cancels and for requesters that ask after the fact.
    var finished: [String: TurnOutcome] = [:]
    var finishedOrder: [String] = []
    /// The Task running the active request's generation; owned and cancelled by this actor only.
    var activeTask: Task<TurnOutcome, Never>?
    var closed = false

    struct Turn {
        var request: TurnRequest
        var model: any GenerationBackend
        var lifecycle = TurnLifecycle()
        var observer: (@Sendable (GenerationEvent) -> Void)?
        var waiter: CheckedContinuation<Void, Never>?
        var lastPosition: Int?
        var gate: SnapshotGate?
        /// Ends the request when its deadline passes while it waits here; owned by this actor.
        var expiry: Task<Void, Never>?
    }

    /// A result of `cancel`.
    public enum CancelResult: Sendable, Equatable {
        /// It was generating; the engine has stopped. (The outcome says `completed` if the
        /// completion was recorded before the stop.)
        case stopped(TurnOutcome)
        /// It was waiting (or its turn had just come): it ended without output.
        case removed(TurnOutcome)
        /// It had already ended.
        case alreadyFinished(TurnOutcome)

        public var outcome: TurnOutcome {
            switch self {
            case .stopped(let o), .removed(let o), .alreadyFinished(let o): o
            }
        }
    }

    init(stored: StoredSession, env: SessionEnvironment, requestEnded: @escaping @Sendable (String) -> Void = { _ in })
    {
        self.requestEnded = requestEnded
        self.id = stored.id
        self.created = stored.created
        self.onBusy = stored.onBusy
        self.options = stored.options
        self.owner = stored.owner
        self.env = env
        self.entries = stored.entries
        self.nextPosition = (stored.entries.map(\.position).max() ?? -1) + 1
        self.queue = SessionQueue(maxWaiting: env.maxQueue)
    }

    // MARK: Admission

    /// Admits a request: it starts now, waits, replaces what runs, or is refused. Checks the
    /// context budget against the transcript as it is now (and again when the turn starts).
    public func admit(_ request: TurnRequest, backend model: any GenerationBackend) throws(SessionError) {
        guard !closed else { throw .sessionNotFound(id) }
        // A live id must be unique; an ended one may be reused (clients may send their own ids).
        guard turns[request.id] == nil else { throw .duplicateRequest(request.id) }
        if request.edit == nil { _ = try plan(request, model: model) }
        let action = queue.submit(id: request.id, policy: request.onBusy, priority: request.priority)
        switch action {
        case .rejectBusy(let active):
            count("inferd_session_rejections_total", ["code": "session_busy"])
            throw .busy(activeRequest: active)
        case .rejectQueueFull(let limit):
            count("inferd_session_rejections_total", ["code": "session_queue_full"])
            throw .queueFull(limit: limit)
        case .start:
            register(request, model)
            _ = turns[request.id]!.lifecycle.admit()
        case .wait:
            register(request, model)
        case .replace(let active, let superseded, _):
            register(request, model)
            for old in superseded { endUnstarted(old, reason: .superseded) }
            if let active { requestStop(active, reason: .superseded) }
            notifyPositions()
        }
        env.logger.debug("session request admitted", ["session_id": id, "request_id": request.id])
    }

    private func register(_ request: TurnRequest, _ model: any GenerationBackend) {
        turns[request.id] = Turn(request: request, model: model)
        finished[request.id] = nil
    }

    // MARK: Running

    /// Waits for the request's turn, runs it, and returns how it ended, once the engine has
    /// stopped and the transcript and KV cache reflect it. Cancelling the calling Task is a stop
    /// request with `cancelReason()` (a client disconnect), never an abandoned generation.
    public nonisolated func run(
        _ requestID: String, observer: @escaping @Sendable (GenerationEvent) -> Void,
        cancelReason: @escaping @Sendable () -> CancellationReason
    ) async -> TurnOutcome {
        await withTaskCancellationHandler {
            await self.runIsolated(requestID, observer: observer)
        } onCancel: {
            let reason = cancelReason()
            Task { _ = await self.cancel(requestID: requestID, reason: reason) }
        }
    }

    private func runIsolated(_ requestID: String, observer: @escaping @Sendable (GenerationEvent) -> Void) async
        -> TurnOutcome
    {
        guard turns[requestID] != nil else { return ended(requestID) }
        turns[requestID]!.observer = observer
        if queue.active != requestID {
            notifyPositions()
            if let deadline = turns[requestID]!.request.deadline {
                turns[requestID]!.expiry = Task {
                    try? await self.env.clock.sleep(until: deadline)
                    guard !Task.isCancelled else { return }
                    self.expireWaiting(requestID)
                }
            }
            await withCheckedContinuation { turns[requestID]!.waiter = $0 }
            guard turns[requestID] != nil else { return ended(requestID) }
        }
        guard turns[requestID]!.lifecycle.beginGeneration() else { return ended(requestID) }
        let task = Task { await self.executeTurn(requestID) }
        activeTask = task
        return await task.value
    }

    private func ended(_ requestID: String) -> TurnOutcome {
        finished[requestID] ?? .cancelledUnstarted(requestID, session: id, reason: .cancelRequest)
    }

    // MARK: Cancellation

    /// Stops a request and, when it was generating, awaits the engine's stop and the record of
    /// it. Nil when the request is unknown here.
    public func cancel(requestID: String, reason: CancellationReason) async -> CancelResult? {
        if let outcome = finished[requestID] { return .alreadyFinished(outcome) }
        guard turns[requestID] != nil else { return recordedOutcome(requestID).map { .alreadyFinished($0) } }
        switch turns[requestID]!.lifecycle.cancel(reason) {
        case .removeFromQueue:
            queue.remove(requestID)
            let outcome = finish(requestID, .cancelledUnstarted(requestID, session: id, reason: reason))
            notifyPositions()
            return .removed(outcome)
        case .endBeforeStart:
            let outcome = finish(requestID, .cancelledUnstarted(requestID, session: id, reason: reason))
            advanceQueue()
            return .removed(outcome)
        case .stopGeneration:
            turns[requestID]!.gate?.close()
            activeTask?.cancel()
            return await awaitActive(requestID)
        case .awaitStop:
            return await awaitActive(requestID)
        case .alreadyFinished:
            // Its end is being recorded (a store write is under way): answer once it is.
            if queue.active == requestID, turns[requestID] != nil, let task = activeTask {
                return .alreadyFinished(await task.value)
            }
            return .alreadyFinished(ended(requestID))
        }
    }

    private func awaitActive(_ requestID: String) async -> CancelResult {
        guard let task = activeTask else { return .alreadyFinished(ended(requestID)) }
        return .stopped(await task.value)
    }

    /// Cancels the active request and everything waiting; returns what each became.
    public func cancelAll(reason: CancellationReason) async -> [CancelResult] {
        var results: [CancelResult] = []
        for waiting in queue.ordered {
            if let r = await cancel(requestID: waiting.id, reason: reason) { results.append(r) }
        }
        if let active = queue.active, let r = await cancel(requestID: active, reason: reason) {
            results.append(r)
        }
        return results
    }

    /// Refuses new requests, cancels what runs or waits (reason `session_deleted`) and awaits it.
    func close() async {
        closed = true
        _ = await cancelAll(reason: .sessionDeleted)
        env.caches.drop(id)
    }

    /// Stops a request without awaiting it (a `replace` does the awaiting by waiting its turn).
    func requestStop(_ requestID: String, reason: CancellationReason) {
        guard turns[requestID] != nil else { return }
        switch turns[requestID]!.lifecycle.cancel(reason) {
        case .removeFromQueue:
            queue.remove(requestID)
            finish(requestID, .cancelledUnstarted(requestID, session: id, reason: reason))
        case .endBeforeStart:
            finish(requestID, .cancelledUnstarted(requestID, session: id, reason: reason))
            advanceQueue()
        case .stopGeneration:
            turns[requestID]!.gate?.close()
            activeTask?.cancel()
        case .awaitStop, .alreadyFinished:
            break
        }
    }

    /// Ends a waiting request that never ran (superseded).
    private func endUnstarted(_ requestID: String, reason: CancellationReason) {
        _ = turns[requestID]?.lifecycle.cancel(reason)
        finish(requestID, .cancelledUnstarted(requestID, session: id, reason: reason))
    }

    /// The request's deadline passed while it waited in this session's queue: it ends as failed
    /// (`queueTimeout`) with no output, never having entered the transcript.
    func expireWaiting(_ requestID: String) {
        guard turns[requestID]?.lifecycle.expireWhileWaiting() == true else { return }
        queue.remove(requestID)
        var outcome = TurnOutcome(requestID: requestID, sessionID: id, status: .failed, content: "")
        outcome.error = .generation(.queueTimeout)
        count("inferd_session_errors_total", ["code": "timeout"])
        count("inferd_session_turns_total", ["status": "failed"])
        log(outcome)
        finish(requestID, outcome)
        notifyPositions()
    }

    // MARK: Queue bookkeeping

    /// Records a request's end, wakes its requester if it waits. Returns the outcome.
    @discardableResult
    func finish(_ requestID: String, _ outcome: TurnOutcome) -> TurnOutcome {
        turns[requestID]?.expiry?.cancel()
        let waiter = turns[requestID]?.waiter
        turns[requestID] = nil
        finished[requestID] = outcome
        finishedOrder.append(requestID)
        if finishedOrder.count > 256 {
            finished[finishedOrder.removeFirst()] = nil
        }
        if outcome.status == .cancelled, let reason = outcome.reason {
            count("inferd_session_cancellations_total", ["reason": reason.rawValue])
        }
        requestEnded(requestID)
        waiter?.resume()
        return outcome
    }

    /// The active request ended: start the next one (interactive before background).
    func advanceQueue() {
        while let next = queue.activeFinished() {
            guard turns[next] != nil, turns[next]!.lifecycle.admit() else { continue }
            let waiter = turns[next]!.waiter
            turns[next]!.waiter = nil
            turns[next]!.expiry?.cancel()
            turns[next]!.expiry = nil
            waiter?.resume()
            break
        }
        notifyPositions()
    }

    /// Tells each waiting requester its place in line when it changed.
    func notifyPositions() {
        for (index, waiter) in queue.ordered.enumerated() {
            let position = index + 1
            guard var turn = turns[waiter.id], turn.lastPosition != position, let observer = turn.observer else {
                continue
            }
            turn.lastPosition = position
            turns[waiter.id] = turn
            observer(.queued(position: position))
        }
    }

    func count(_ name: String, _ labels: [String: String]) {
        env.metrics.counter(name, help: Self.metricHelp[name] ?? name, labels: labels).increment()
    }

    static let metricHelp = [
        "inferd_session_turns_total": "Session requests by how they ended (completed, cancelled, failed).",
        "inferd_session_cancellations_total": "Session requests cancelled, by reason.",
        "inferd_session_errors_total": "Session requests that failed, by error code (not cancellations).",
        "inferd_session_rejections_total": "Session requests refused at admission, by code.",
        "inferd_kv_cache_evictions_total": "Session KV caches dropped to stay under kv_cache_mib.",
        "inferd_session_cache_rebuilds_total":
            "Session turns with earlier turns but no KV cache on this server, computed from the transcript.",
    ]
}
