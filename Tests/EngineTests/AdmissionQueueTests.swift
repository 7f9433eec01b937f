import Testing

@testable import Engine

/// The admission rules as pure state: time is an argument, so nothing here waits or races.
@Suite struct AdmissionQueueTests {
    typealias Queue = AdmissionQueue<String>
    let t0 = ContinuousClock.now

    func at(_ ms: Int) -> ContinuousClock.Instant { t0 + .milliseconds(ms) }

    func queue(
        active: Int = 2, waiting: Int = 2, preemptAfterMs: Int = 500, minimumSteps: Int = 0,
        starvationFloorMs: Int = 0
    ) -> Queue {
        Queue(
            policy: AdmissionPolicy(
                maxActiveSequences: active, maxQueue: waiting, preemptAfter: .milliseconds(preemptAfterMs),
                starvationFactor: 4, starvationFloor: .milliseconds(starvationFloorMs),
                minimumStepsBeforePreemption: minimumSteps))
    }

    @Test func admitsUpToCapacityThenQueuesThenRefuses() {
        var q = queue()
        var decision = q.submit("a", priority: .interactive, deadline: nil, now: t0)
        #expect(decision == .admitted)
        decision = q.submit("b", priority: .interactive, deadline: nil, now: t0)
        #expect(decision == .admitted)
        decision = q.submit("c", priority: .interactive, deadline: nil, now: t0)
        #expect(decision == .queued(position: 1))
        decision = q.submit("d", priority: .interactive, deadline: nil, now: t0)
        #expect(decision == .queued(position: 2))
        guard case .refused(let length, let retry) = q.submit("e", priority: .interactive, deadline: nil, now: t0)
        else {
            Issue.record("a fifth request must be refused")
            return
        }
        #expect(length == 2 && retry >= 1)
        #expect(q.runningCount == 2 && q.waitingCount == 2)
    }

    @Test func aQueueOfZeroRefusesAsSoonAsEveryPlaceIsTaken() {
        var q = queue(active: 1, waiting: 0)
        var decision = q.submit("a", priority: .interactive, deadline: nil, now: t0)
        #expect(decision == .admitted)
        decision = q.submit("b", priority: .interactive, deadline: nil, now: t0)
        // No generation has ended yet: the estimate assumes 4 s per place.
        #expect(decision == .refused(queueLength: 0, retryAfterSeconds: 4))
        #expect(q.waitingCount == 0)
    }

    @Test func positionsAreToldOnceAndAgainWhenTheyChange() {
        var q = queue(active: 1, waiting: 4)
        _ = q.submit("a", priority: .interactive, deadline: nil, now: t0)
        _ = q.submit("b", priority: .interactive, deadline: nil, now: t0)
        _ = q.submit("c", priority: .interactive, deadline: nil, now: t0)
        var actions = q.update(now: at(1))
        #expect(actions == [.position("b", 1), .position("c", 2)])
        actions = q.update(now: at(2))
        #expect(actions == [])
        let ended = q.finished("a", now: at(3))
        #expect(ended)
        actions = q.update(now: at(3))
        #expect(actions == [.admit("b"), .position("c", 1)])
    }

    @Test func cancellingAWaiterRemovesItAndTheOthersMoveUp() {
        var q = queue(active: 1, waiting: 4)
        _ = q.submit("a", priority: .interactive, deadline: nil, now: t0)
        _ = q.submit("b", priority: .interactive, deadline: nil, now: t0)
        _ = q.submit("c", priority: .interactive, deadline: nil, now: t0)
        _ = q.update(now: at(1))
        var removed = q.remove("b")
        #expect(removed)
        removed = q.remove("b")
        #expect(!removed)
        // A running generation is not the queue's to remove: the worker stops it.
        removed = q.remove("a")
        #expect(!removed)
        let actions = q.update(now: at(2))
        #expect(actions == [.position("c", 1)])
        #expect(q.waitingCount == 1)
    }

    @Test func interactiveGoesBeforeBackgroundAndEachClassIsFirstComeFirstServed() {
        var q = queue(active: 1, waiting: 8)
        _ = q.submit("x", priority: .interactive, deadline: nil, now: t0)
        _ = q.submit("bg1", priority: .background, deadline: nil, now: at(1))
        let decision = q.submit("i1", priority: .interactive, deadline: nil, now: at(2))
        #expect(decision == .queued(position: 1))
        _ = q.submit("bg2", priority: .background, deadline: nil, now: at(3))
        _ = q.submit("i2", priority: .interactive, deadline: nil, now: at(4))
        #expect(q.order(at: at(5)) == ["i1", "i2", "bg1", "bg2"])
        var started: [String] = []
        var running = "x"
        for step in 0..<5 {
            q.finished(running, now: at(10 + step))
            for case .admit(let id) in q.update(now: at(10 + step)) {
                started.append(id)
                running = id
            }
        }
        #expect(started == ["i1", "i2", "bg1", "bg2"])
    }

    @Test func anOverdueInteractiveWaiterParksABackgroundGenerationThatThenResumes() {
        var q = queue(active: 1, waiting: 4, preemptAfterMs: 500, minimumSteps: 2, starvationFloorMs: 60_000)
        _ = q.submit("bg", priority: .background, deadline: nil, now: t0)
        _ = q.submit("i", priority: .interactive, deadline: nil, now: at(100))
        var actions = q.update(now: at(200))
        #expect(actions == [.position("i", 1)])
        // Overdue, but the background one has not made its minimum steps since it got its place.
        actions = q.update(now: at(700))
        #expect(actions == [])
        q.stepped(["bg"])
        q.stepped(["bg"])
        actions = q.update(now: at(700))
        #expect(actions == [.park("bg"), .admit("i"), .position("bg", 1)])
        #expect(q.isWaiting("bg") && q.isRunning("i"))
        q.finished("i", now: at(900))
        actions = q.update(now: at(900))
        #expect(actions == [.admit("bg")])
    }

    @Test func interactiveGenerationsAreNeverParked() {
        var q = queue(active: 1, waiting: 4, preemptAfterMs: 0)
        _ = q.submit("i1", priority: .interactive, deadline: nil, now: t0)
        q.stepped(["i1"])
        _ = q.submit("i2", priority: .interactive, deadline: nil, now: at(1))
        let actions = q.update(now: at(10_000))
        #expect(actions == [.position("i2", 1)])
    }

    @Test func starvationGuardGivesTheNextFreePlaceToALongWaitingBackgroundRequest() {
        // preempt after 500 ms, starvation after 4 × 500 ms = 2 s.
        var q = queue(active: 1, waiting: 8, preemptAfterMs: 500, minimumSteps: 3)
        _ = q.submit("i0", priority: .interactive, deadline: nil, now: t0)
        _ = q.submit("bg", priority: .background, deadline: nil, now: t0)
        _ = q.submit("i1", priority: .interactive, deadline: nil, now: at(1000))
        #expect(q.order(at: at(1999)) == ["i1", "bg"])
        #expect(q.order(at: at(2000)) == ["bg", "i1"])
        _ = q.update(now: at(1999))
        var actions = q.update(now: at(2000))
        #expect(actions == [.position("bg", 1), .position("i1", 2)])
        q.finished("i0", now: at(2100))
        actions = q.update(now: at(2100))
        #expect(actions == [.admit("bg"), .position("i1", 1)])
        // Now it is protected for its minimum steps although i1 is long overdue …
        q.stepped(["bg"])
        q.stepped(["bg"])
        actions = q.update(now: at(5000))
        #expect(actions == [])
        // … and then yields to it.
        q.stepped(["bg"])
        actions = q.update(now: at(5000))
        #expect(actions == [.park("bg"), .admit("i1"), .position("bg", 1)])
    }

    @Test func noStarvationGuardWhileABackgroundGenerationRuns() {
        var q = queue(active: 2, waiting: 8, preemptAfterMs: 500, minimumSteps: 100)
        _ = q.submit("bg0", priority: .background, deadline: nil, now: t0)
        _ = q.submit("i0", priority: .interactive, deadline: nil, now: t0)
        _ = q.submit("bg1", priority: .background, deadline: nil, now: t0)
        _ = q.submit("i1", priority: .interactive, deadline: nil, now: at(1))
        #expect(q.order(at: at(60_000)) == ["i1", "bg1"])
    }

    @Test func aWaiterPastItsDeadlineLeavesTheQueue() {
        var q = queue(active: 1, waiting: 4)
        _ = q.submit("a", priority: .interactive, deadline: nil, now: t0)
        _ = q.submit("b", priority: .interactive, deadline: at(1000), now: t0)
        _ = q.submit("c", priority: .interactive, deadline: nil, now: t0)
        var actions = q.update(now: at(999))
        #expect(actions == [.position("b", 1), .position("c", 2)])
        #expect(q.nextWakeUp() == at(1000))
        actions = q.update(now: at(1000))
        #expect(actions == [.expireWaiting("b"), .position("c", 1)])
        #expect(!q.isWaiting("b"))
    }

    @Test func aRunningGenerationPastItsDeadlineEndsAndFreesItsPlace() {
        var q = queue(active: 1, waiting: 4)
        _ = q.submit("a", priority: .interactive, deadline: at(500), now: t0)
        _ = q.submit("b", priority: .interactive, deadline: nil, now: t0)
        _ = q.update(now: at(1))
        let actions = q.update(now: at(500))
        #expect(actions == [.expireActive("a"), .admit("b")])
        // The worker reports the end of a generation it ended for a deadline; nothing happens twice.
        let ended = q.finished("a", now: at(501))
        #expect(!ended)
        #expect(q.runningCount == 1)
    }

    @Test func aParkedGenerationCanExpireWhileItWaits() {
        var q = queue(active: 1, waiting: 4, preemptAfterMs: 0, starvationFloorMs: 60_000)
        _ = q.submit("bg", priority: .background, deadline: at(2000), now: t0)
        q.stepped(["bg"])
        _ = q.submit("i", priority: .interactive, deadline: nil, now: at(10))
        var actions = q.update(now: at(10))
        #expect(actions == [.park("bg"), .admit("i"), .position("bg", 1)])
        actions = q.update(now: at(2000))
        #expect(actions == [.expireWaiting("bg")])
    }

    @Test func nextWakeUpCoversPreemptionAndTheStarvationGuard() {
        var q = queue(active: 1, waiting: 4, preemptAfterMs: 500, starvationFloorMs: 0)
        _ = q.submit("bg", priority: .background, deadline: nil, now: t0)
        #expect(q.nextWakeUp() == nil)
        _ = q.submit("i", priority: .interactive, deadline: nil, now: at(100))
        #expect(q.nextWakeUp() == at(600))
        var r = queue(active: 1, waiting: 4, preemptAfterMs: 500, starvationFloorMs: 0)
        _ = r.submit("i", priority: .interactive, deadline: nil, now: t0)
        _ = r.submit("bg", priority: .background, deadline: nil, now: at(100))
        #expect(r.nextWakeUp() == at(2100))
    }

    @Test func retryAfterFollowsTheMeanTimeAPlaceIsHeld() {
        var q = queue(active: 2, waiting: 0)
        _ = q.submit("a", priority: .interactive, deadline: nil, now: t0)
        q.finished("a", now: at(10_000))
        // 10 s held, two places: a place frees up about every 5 s.
        #expect(q.retryAfterSeconds == 5)
        var quick = queue(active: 8, waiting: 0)
        _ = quick.submit("a", priority: .interactive, deadline: nil, now: t0)
        quick.finished("a", now: at(5))
        #expect(quick.retryAfterSeconds == 1)
    }
}
