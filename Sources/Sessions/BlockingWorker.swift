import Foundation

/// One dedicated thread that runs blocking jobs in order (libpq's network round trips). Async
/// callers suspend while their job runs here, so a slow or hung database never holds one of
/// Swift's few cooperative threads (blocking them delays every other Task of the server).
final class BlockingWorker: @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [() -> Void] = []
    private var stopping = false

    init(name: String) {
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the worker's thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws(StoreError) -> T) async throws(StoreError) -> T {
        let result: Result<T, StoreError> = await withCheckedContinuation { continuation in
            enqueue {
                do throws(StoreError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Runs `body` on the worker's thread and blocks the caller until it ends (start-up only).
    func runBlocking<T: Sendable>(_ body: @escaping @Sendable () throws(StoreError) -> T) throws(StoreError) -> T {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        enqueue {
            do throws(StoreError) {
                box.result = .success(try body())
            } catch {
                box.result = .failure(error)
            }
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }

    /// Ends the thread once the jobs already queued have run.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func enqueue(_ job: @escaping () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }

    /// Carries a result from the worker's thread to the blocked caller (the semaphore orders them).
    private final class ResultBox<T>: @unchecked Sendable {
        var result: Result<T, StoreError>?
    }
}
