import Telemetry

/// A generation the engine has accepted (running or waiting for a place). Callers that must
/// answer before the generation ends (a stream sends its headers first) submit, then await
/// `result()`; `GenerationRunner.generate` does both.
///
/// Cancelling the Task that awaits `result()` stops the generation, and `result()` still
/// returns only once the engine has stopped working on it. A ticket dropped without being
/// awaited cancels its generation, so nothing runs for nobody.
public final class GenerationTicket: Sendable {
    /// Where the job's single result lands, and who waits for it.
    final class Outcome: Sendable {
        private enum State {
            case pending([CheckedContinuation<Result<GenerationResult, GenerationError>, Never>])
            case done(Result<GenerationResult, GenerationError>)
        }
        private let state = Locked<State>(.pending([]))

        func deliver(_ result: Result<GenerationResult, GenerationError>) {
            let waiters = state.withLock {
                s -> [CheckedContinuation<Result<GenerationResult, GenerationError>, Never>] in
                guard case .pending(let waiting) = s else { return [] }
                s = .done(result)
                return waiting
            }
            for w in waiters { w.resume(returning: result) }
        }

        var isDone: Bool {
            state.withLock {
                if case .done = $0 { return true }
                return false
            }
        }

        func wait() async -> Result<GenerationResult, GenerationError> {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s -> Result<GenerationResult, GenerationError>? in
                    switch s {
                    case .done(let r): return r
                    case .pending(let waiting):
                        s = .pending(waiting + [continuation])
                        return nil
                    }
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }

    let job: GenerationJob
    let worker: GenerationWorker
    let outcome: Outcome

    init(job: GenerationJob, worker: GenerationWorker, outcome: Outcome) {
        self.job = job
        self.worker = worker
        self.outcome = outcome
    }

    deinit {
        if !outcome.isDone { worker.cancel(job) }
    }

    /// The generation's result, once the engine has stopped working on it; cancellation is a
    /// result (`FinishReason.cancelled`), not an error.
    public func result() async throws(GenerationError) -> GenerationResult {
        let result = await withTaskCancellationHandler {
            await outcome.wait()
        } onCancel: {
            cancel()
        }
        return try result.get()
    }

    /// Stops the generation: a waiting one ends at once, a running one within one step.
    public func cancel() {
        worker.cancel(job)
    }
}
