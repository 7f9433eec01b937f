import Testing

@testable import RemoteBackend

/// The health checks' rules, with time as an argument: when checks fall due, and how many
/// failures or successes in a row mark an upstream down or up.
@Suite struct UpstreamHealthTests {
    let t0 = ContinuousClock.now
    let policy = HealthCheckPolicy(interval: .seconds(5), downAfter: 2, upAfter: 1, timeout: .seconds(1))

    @Test func checksFallDueEveryIntervalAndNeverTwiceAtOnce() {
        var h = UpstreamHealth(count: 2, policy: policy, now: t0)
        #expect(h.due(now: t0 + .seconds(4)) == [])
        #expect(h.nextWakeUp() == t0 + .seconds(5))
        #expect(h.due(now: t0 + .seconds(5)) == [.check(0), .check(1)])
        // Still running: not started again, and no wake-up is owed for them.
        #expect(h.due(now: t0 + .seconds(9)) == [])
        #expect(h.nextWakeUp() == nil)
        #expect(h.checked(0, ok: true, now: t0 + .seconds(6)) == [])
        #expect(h.nextWakeUp() == t0 + .seconds(11))
        #expect(h.due(now: t0 + .seconds(10)) == [])
        #expect(h.due(now: t0 + .seconds(11)) == [.check(0)])
    }

    @Test func twoFailuresInARowMarkDownAndOneSuccessMarksUp() {
        var h = UpstreamHealth(count: 1, policy: policy, now: t0)
        _ = h.due(now: t0 + .seconds(5))
        #expect(h.checked(0, ok: false, now: t0 + .seconds(5)) == [])
        #expect(h.isUp(0))
        _ = h.due(now: t0 + .seconds(10))
        #expect(h.checked(0, ok: false, now: t0 + .seconds(10)) == [.markDown(0)])
        #expect(!h.isUp(0))
        // Further failures say nothing new.
        _ = h.due(now: t0 + .seconds(15))
        #expect(h.checked(0, ok: false, now: t0 + .seconds(15)) == [])
        _ = h.due(now: t0 + .seconds(20))
        #expect(h.checked(0, ok: true, now: t0 + .seconds(20)) == [.markUp(0)])
        #expect(h.isUp(0))
    }

    @Test func aSuccessBetweenFailuresResetsTheCount() {
        var h = UpstreamHealth(count: 1, policy: policy, now: t0)
        #expect(h.observed(0, ok: false) == [])
        #expect(h.observed(0, ok: true) == [])
        #expect(h.observed(0, ok: false) == [])
        #expect(h.observed(0, ok: false) == [.markDown(0)])
    }

    @Test func requestsCountOnlyWhileUpAndOnlyChecksBringItBack() {
        let strict = HealthCheckPolicy(interval: .seconds(1), downAfter: 1, upAfter: 2, timeout: .seconds(1))
        var h = UpstreamHealth(count: 2, policy: strict, now: t0)
        #expect(h.observed(1, ok: false) == [.markDown(1)])
        #expect(h.isUp(0))
        // A late success of a request sent before it went down does not bring it up.
        #expect(h.observed(1, ok: true) == [])
        #expect(!h.isUp(1))
        _ = h.due(now: t0 + .seconds(1))
        #expect(h.checked(1, ok: true, now: t0 + .seconds(1)) == [])
        _ = h.due(now: t0 + .seconds(2))
        #expect(h.checked(1, ok: true, now: t0 + .seconds(2)) == [.markUp(1)])
    }
}
