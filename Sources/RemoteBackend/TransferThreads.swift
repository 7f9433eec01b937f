import Foundation

/// The threads upstream transfers run on (libcurl's loop blocks its thread, so never Swift's
/// cooperative pool). A thread whose transfer ended stays parked for `idleSeconds`, and the next
/// transfer is handed to it: making a thread (clone, stack, Foundation's set-up, then waiting to
/// be scheduled for the first time) was on every proxied request's way to the upstream, which
/// is the proxy's added time to first token. Each transfer gets a thread of its own at once,
/// parked or new, so a long stream never holds another back.
final class TransferThreads: @unchecked Sendable {
    // @unchecked: `idle` and every worker's `job` are only touched under `lock`.
    static let shared = TransferThreads(idleSeconds: 30)

    private final class Worker: @unchecked Sendable {
        let wake = DispatchSemaphore(value: 0)
        /// Set under the pool's lock before `wake` is signalled (or before the thread starts).
        var job: (@Sendable () -> Void)?
    }

    private let lock = NSLock()
    /// Parked workers, the most recently used last (it is the likeliest to be cache-warm).
    private var idle: [Worker] = []
    private var threads = 0
    let idleSeconds: Double

    init(idleSeconds: Double) { self.idleSeconds = idleSeconds }

    /// Threads alive, parked or running a transfer.
    var threadCount: Int { lock.withLock { threads } }
    /// Threads parked, waiting for a transfer.
    var idleCount: Int { lock.withLock { idle.count } }

    /// Runs `job` on a parked thread, or on a new one when none is parked; returns at once.
    func run(_ job: @escaping @Sendable () -> Void) {
        let parked: Worker? = lock.withLock {
            guard let worker = idle.popLast() else {
                threads += 1
                return nil
            }
            worker.job = job
            return worker
        }
        if let parked {
            parked.wake.signal()
            return
        }
        let worker = Worker()
        worker.job = job
        let thread = Thread { [self] in loop(worker) }
        thread.name = "inferd-upstream"
        thread.start()
    }

    private func loop(_ worker: Worker) {
        while true {
            let job = lock.withLock {
                defer { worker.job = nil }
                return worker.job
            }
            job?()
            lock.withLock { idle.append(worker) }
            guard worker.wake.wait(timeout: .now() + idleSeconds) == .timedOut else { continue }
            let leaving = lock.withLock { () -> Bool in
                guard let i = idle.firstIndex(where: { $0 === worker }) else { return false }
                idle.remove(at: i)
                threads -= 1
                return true
            }
            if leaving { return }
            // Taken from `idle` just as the wait timed out: its job and signal are on their way.
            worker.wake.wait()
        }
    }
}
