/// Which upstreams are up, as pure state: every change returns what its driver must do (start a
/// check, mark one down or up), and time comes in as an argument, so the rules are tested without
/// sockets or clocks.
///
/// Rules: every upstream starts up (the server asked one's `/models` before it was ready) and is
/// first checked one `interval` after the start. A finished check schedules the next one
/// `interval` later; a check is never started twice at once. `downAfter` failures in a row
/// (checks, or requests that found it unreachable) mark an up upstream down; `upAfter` successful
/// checks in a row mark a down one up.
struct UpstreamHealth: Sendable {
    typealias Instant = ContinuousClock.Instant

    enum Action: Sendable, Equatable {
        /// Ask upstream `i` now; report with `checked`.
        case check(Int)
        case markDown(Int)
        case markUp(Int)
    }

    struct Entry: Sendable, Equatable {
        var up = true
        var failures = 0
        var successes = 0
        var nextCheck: Instant
        var checking = false
    }

    let policy: HealthCheckPolicy
    private(set) var entries: [Entry]

    init(count: Int, policy: HealthCheckPolicy, now: Instant) {
        self.policy = policy
        entries = Array(repeating: Entry(nextCheck: now + policy.interval), count: count)
    }

    func isUp(_ i: Int) -> Bool { entries[i].up }

    /// The checks due as of `now` (each marked as running).
    mutating func due(now: Instant) -> [Action] {
        var actions: [Action] = []
        for i in entries.indices where !entries[i].checking && entries[i].nextCheck <= now {
            entries[i].checking = true
            actions.append(.check(i))
        }
        return actions
    }

    /// A check of upstream `i` ended (`ok`: it answered 2xx in time).
    mutating func checked(_ i: Int, ok: Bool, now: Instant) -> [Action] {
        entries[i].checking = false
        entries[i].nextCheck = now + policy.interval
        return record(i, ok: ok)
    }

    /// A request to upstream `i` reached it (`ok`) or found it unreachable.
    mutating func observed(_ i: Int, ok: Bool) -> [Action] {
        // A down upstream gets no requests; one still running when it was marked down says
        // nothing about now, and only checks bring it back.
        guard entries[i].up else { return [] }
        return record(i, ok: ok)
    }

    private mutating func record(_ i: Int, ok: Bool) -> [Action] {
        if ok {
            entries[i].failures = 0
            entries[i].successes += 1
            if !entries[i].up, entries[i].successes >= policy.upAfter {
                entries[i].up = true
                return [.markUp(i)]
            }
        } else {
            entries[i].successes = 0
            entries[i].failures += 1
            if entries[i].up, entries[i].failures >= policy.downAfter {
                entries[i].up = false
                return [.markDown(i)]
            }
        }
        return []
    }

    /// When the next check falls due (nil while every upstream is being checked).
    func nextWakeUp() -> Instant? {
        entries.filter { !$0.checking }.map(\.nextCheck).min()
    }
}
