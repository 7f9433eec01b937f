import Telemetry

/// The responses generating now, by id, and the Tasks the server owns for background ones. A
/// foreground response's work belongs to its request's Task (the connection cancels it); a
/// background one's to the Task kept here, which only `POST /v1/responses/{id}/cancel` cancels.
final class ResponseRegistry: Sendable {
    private struct Entry {
        var run: ResponseRun
        var task: Task<Void, Never>?
    }

    private let entries = Locked([String: Entry]())
    private let stopping = Locked(false)

    /// Set once the server stops: background responses that end from now on are failed, not cancelled.
    var isStopping: Bool { stopping.withLock { $0 } }

    /// Marks the server stopping and returns the background Tasks still running.
    func beginStopping() -> [Task<Void, Never>] {
        stopping.withLock { $0 = true }
        return entries.withLock { $0.values.compactMap(\.task) }
    }

    func add(_ run: ResponseRun) {
        entries.withLock { $0[run.id] = Entry(run: run) }
    }

    /// Adds `run` unless it is a background response and `admitting`, given how many background
    /// responses its owner runs here now, refuses it; counted and added under one lock.
    func add(_ run: ResponseRun, admitting: (Int) -> TenantQuota.Refusal?) -> TenantQuota.Refusal? {
        let record = run.record
        return entries.withLock { e in
            if record.response.background {
                let running = e.values.filter { entry in
                    let r = entry.run.record
                    return r.response.background && !r.response.isFinished && r.owner == record.owner
                }.count
                if let refusal = admitting(running) { return refusal }
            }
            e[run.id] = Entry(run: run)
            return nil
        }
    }

    /// Records a background response's Task; ignored when the response already ended.
    func setTask(_ id: String, _ task: Task<Void, Never>) {
        entries.withLock { e in
            if e[id] != nil { e[id]!.task = task }
        }
    }

    func run(_ id: String) -> ResponseRun? { entries.withLock { $0[id]?.run } }
    func task(_ id: String) -> Task<Void, Never>? { entries.withLock { $0[id]?.task } }
    func remove(_ id: String) { _ = entries.withLock { $0.removeValue(forKey: id) } }
    var count: Int { entries.withLock { $0.count } }
}
