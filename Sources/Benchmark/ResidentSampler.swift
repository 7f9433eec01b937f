import Foundation
import InferdServer
import Synchronization

/// Samples the process's resident memory every 5 ms on a thread of its own, from creation until
/// `stop()`, which returns the largest value seen. A thread rather than a task: the cooperative
/// pool is busy with the streams being measured.
final class ResidentSampler: Sendable {
    private let state = Mutex((running: true, peak: ProcessStats.residentBytes()))
    private let finished = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            while state.withLock({ $0.running }) {
                let now = ProcessStats.residentBytes()
                state.withLock { $0.peak = max($0.peak, now) }
                usleep(5000)
            }
            finished.signal()
        }
        thread.start()
    }

    /// Ends sampling and returns the peak in bytes.
    func stop() -> Int {
        state.withLock { $0.running = false }
        finished.wait()
        let last = ProcessStats.residentBytes()
        return state.withLock { max($0.peak, last) }
    }
}
