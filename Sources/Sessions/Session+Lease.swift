import Foundation

/// Turns over a store shared by several servers: before a turn runs it takes the session's
/// lease in the store (so two servers never run turns of one session at once, however requests
/// are routed) and re-reads the transcript (another server may have added turns).
extension Session {
    enum LeaseWait {
        case granted(any TurnLease)
        case ended(TurnOutcome)
    }

    /// Runs the active request's turn under the session's lease (taken only when the store is
    /// shared; a server's own store needs none: this actor already serializes its turns).
    func executeTurn(_ requestID: String) async -> TurnOutcome {
        guard env.store.isShared else { return await executeLeasedTurn(requestID) }
        let lease: any TurnLease
        switch await takeLease(requestID) {
        case .granted(let l): lease = l
        case .ended(let outcome): return outcome
        }
        let outcome: TurnOutcome
        do {
            if let stored = try await env.store.loadSession(id) {
                refresh(from: stored)
                outcome = await executeLeasedTurn(requestID)
            } else {
                // Deleted through another server while this request waited.
                turns[requestID]!.lifecycle.refuse()
                outcome = endFailed(requestID, .sessionNotFound(id))
            }
        } catch {
            turns[requestID]!.lifecycle.refuse()
            outcome = endFailed(requestID, Self.storeFailure(error))
        }
        await lease.release()
        return outcome
    }

    /// Waits for the lease as the request's `on_busy` says: `reject` is refused at once when
    /// another server holds it; `queue` and `replace` wait (a turn on another server cannot be
    /// superseded from here), until the deadline or a cancel.
    private func takeLease(_ requestID: String) async -> LeaseWait {
        let request = turns[requestID]!.request
        var pause = Duration.milliseconds(2)
        while true {
            do {
                if let lease = try await env.store.tryTurnLease(session: id) {
                    if turns[requestID]?.lifecycle.stopReason == nil { return .granted(lease) }
                    await lease.release()
                }
            } catch {
                turns[requestID]!.lifecycle.refuse()
                return .ended(endFailed(requestID, Self.storeFailure(error)))
            }
            if let reason = turns[requestID]!.lifecycle.stopReason {
                // Cancelled while it waited for another server: it ends without output.
                _ = turns[requestID]!.lifecycle.engineReturned(.success(.cancelled))
                let outcome = finish(requestID, .cancelledUnstarted(requestID, session: id, reason: reason))
                log(outcome)
                activeTask = nil
                advanceQueue()
                return .ended(outcome)
            }
            if request.onBusy == .reject {
                turns[requestID]!.lifecycle.refuse()
                count("inferd_session_rejections_total", ["code": "session_busy"])
                return .ended(endFailed(requestID, .busy(activeRequest: nil)))
            }
            if let deadline = request.deadline, deadline <= env.clock.now {
                turns[requestID]!.lifecycle.refuse()
                count("inferd_session_errors_total", ["code": "timeout"])
                return .ended(endFailed(requestID, .generation(.queueTimeout)))
            }
            // The store is polled in real time; whether the deadline has passed is the clock's.
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// Takes the transcript as the store holds it (the lease is held, or nothing runs here).
    func refresh(from stored: StoredSession) {
        entries = stored.entries
        nextPosition = max(nextPosition, (stored.entries.map(\.position).max() ?? -1) + 1)
    }

    /// Refreshes the transcript unless a request runs or waits here (then it is current).
    func refreshIfIdle(from stored: StoredSession) {
        guard queue.active == nil, queue.waitingCount == 0 else { return }
        refresh(from: stored)
    }

    /// Whether the transcript shows a response in progress (of `requestID`, or any) that does
    /// not run here: with a shared store, it runs on another server (or died with it).
    public func runsElsewhere(_ requestID: String? = nil) -> Bool {
        entries.contains { e in
            e.kind == .response && e.status == .inProgress && (requestID == nil || e.requestID == requestID)
                && (e.requestID.map { turns[$0] == nil } ?? true)
        }
    }

    /// A store failure as the request sees it: unreachable is `storeUnavailable` (503).
    static func storeFailure(_ error: StoreError) -> SessionError {
        error.unavailable ? .storeUnavailable(error.description) : .storage(error.description)
    }
}
