import Foundation
import Telemetry
import TestSupport
import Testing

@testable import RemoteBackend

/// Transfers reuse parked threads, each running transfer has a thread of its own, and parked
/// threads leave after their idle time.
@Suite struct TransferThreadsTests {
    /// Runs `job` on the pool and returns the id of the thread that ran it.
    func threadID(on pool: TransferThreads) async -> pthread_t {
        await withCheckedContinuation { (c: CheckedContinuation<pthread_t, Never>) in
            pool.run { c.resume(returning: pthread_self()) }
        }
    }

    @Test func aParkedThreadTakesTheNextJobAndIdleOnesLeave() async throws {
        let pool = TransferThreads(idleSeconds: 1)
        let first = await threadID(on: pool)
        #expect(await eventually { pool.idleCount == 1 })
        let second = await threadID(on: pool)
        #expect(pthread_equal(first, second) != 0, "the second job did not run on the parked thread")
        #expect(pool.threadCount == 1)
        #expect(await eventually(timeout: .seconds(5)) { pool.threadCount == 0 }, "the idle thread stayed")
    }

    @Test func concurrentJobsEachGetAThreadAtOnce() async throws {
        let pool = TransferThreads(idleSeconds: 1)
        _ = await threadID(on: pool)
        #expect(await eventually { pool.idleCount == 1 })
        // Each job waits for the other to have started: with one thread for both, neither would.
        let a = DispatchSemaphore(value: 0)
        let b = DispatchSemaphore(value: 0)
        let met = await withCheckedContinuation { (c: CheckedContinuation<(Bool, Bool), Never>) in
            let results = Locked<[Bool]>([])
            @Sendable func done(_ ok: Bool) {
                let all = results.withLock { r -> [Bool]? in
                    r.append(ok)
                    return r.count == 2 ? r : nil
                }
                if let all { c.resume(returning: (all[0], all[1])) }
            }
            pool.run {
                a.signal()
                done(b.wait(timeout: .now() + 2) == .success)
            }
            pool.run {
                b.signal()
                done(a.wait(timeout: .now() + 2) == .success)
            }
        }
        #expect(met.0 && met.1, "the two jobs did not run side by side")
        #expect(pool.threadCount == 2)
        #expect(await eventually(timeout: .seconds(5)) { pool.threadCount == 0 })
    }
}
