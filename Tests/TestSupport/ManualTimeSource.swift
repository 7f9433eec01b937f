import Synchronization
import Timekeeping

/// A time source that moves only when a test says so: `advance(by:)` moves `now` and wakes the
/// sleepers whose deadline it reached (and the threads in timed waits, through `onAdvance`).
/// Tests decide time with it instead of waiting for it; `sleepers` and `waitForSleepers` tell
/// when the subject has started to wait, so an advance never comes before the wait it ends.
public final class ManualTimeSource: TimeSource {
    private struct Sleeper {
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ContinuousClock.Instant
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
        var wakes: [@Sendable () -> Void] = []
    }

    private let state: Mutex<State>

    /// Starts at the real present, so instants from it compare sensibly with the system's.
    public init(start: ContinuousClock.Instant = .now) {
        state = Mutex(State(now: start))
    }

    public var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// How many sleeps are waiting for a later time.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let resumeNow: Bool = state.withLock { s in
                    if Task.isCancelled || deadline <= s.now { return true }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: c)
                    return false
                }
                if resumeNow {
                    if Task.isCancelled { c.resume(throwing: CancellationError()) } else { c.resume() }
                }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    public func onAdvance(_ wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.wakes.append(wake) }
    }

    /// Moves time forward by `duration`, resumes every sleeper whose deadline has come and wakes
    /// the threads in timed waits.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "time only moves forward")
        let (due, wakes) = state.withLock { s in
            s.now += duration
            let now = s.now
            let due = s.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { s.sleepers[id] = nil }
            return (due.values.map(\.continuation), s.wakes)
        }
        for c in due { c.resume() }
        for wake in wakes { wake() }
    }

    /// Waits (in real time, polling; at most `timeout`) until at least `count` sleeps wait for a
    /// later time. A bound for a stuck test, not a timing check: returns false if it ran out.
    public func waitForSleepers(_ count: Int = 1, timeout: Duration = .seconds(60)) async -> Bool {
        let giveUp = ContinuousClock.now + timeout
        while sleepers < count {
            guard ContinuousClock.now < giveUp else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}
