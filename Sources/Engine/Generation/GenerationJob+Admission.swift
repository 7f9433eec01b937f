/// What the admission queue needs of a job: an identity, its queue positions, and ways to end
/// it while nobody steps it.
extension GenerationJob {
    var admissionID: ObjectIdentifier { ObjectIdentifier(self) }

    /// False until its first step (a parked job has started; a waiting one may not have).
    var hasStarted: Bool {
        if case .waiting = phase { return false }
        return true
    }

    /// Tells the caller its place in the queue, unless the job has already ended.
    func notifyQueued(position: Int) {
        ended.withLock { isEnded in
            guard !isEnded else { return }
            onEvent(.queued(position: position))
        }
    }

    /// Ends a job that is waiting or parked, from whichever thread took it out of the queue
    /// (nobody else touches it then). Cancelled: the answer so far, if it had started. Timed out:
    /// `queueTimeout` if it never started, else the answer so far with `FinishReason.timeout`.
    func endWhileWaiting(timedOut: Bool) {
        ended.withLock { $0 = true }
        if !timedOut {
            finish(.cancelled)
        } else if hasStarted {
            finish(.timeout)
        } else {
            fail(.queueTimeout)
        }
    }

    /// Ends a running job whose deadline passed, at a step boundary (worker thread).
    func endTimedOut() {
        ended.withLock { $0 = true }
        finish(.timeout)
    }
}
