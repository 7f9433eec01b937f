import Testing

@testable import Sessions

/// The queue state machine alone: no I/O, no actors.
@Suite struct SessionQueueTests {
    @Test func firstRequestStartsAndLaterOnesWaitInOrder() {
        var q = SessionQueue(maxWaiting: 4)
        do {
            let r = q.submit(id: "a", policy: .queue, priority: .interactive)
            #expect(r == .start)
        }
        do {
            let r = q.submit(id: "b", policy: .queue, priority: .interactive)
            #expect(r == .wait(position: 1))
        }
        do {
            let r = q.submit(id: "c", policy: .queue, priority: .interactive)
            #expect(r == .wait(position: 2))
        }
        do {
            let r = q.activeFinished()
            #expect(r == "b")
        }
        #expect(q.position(of: "c") == 1)
        do {
            let r = q.activeFinished()
            #expect(r == "c")
        }
        do {
            let r = q.activeFinished()
            #expect(r == nil)
        }
        #expect(q.isIdle)
    }

    @Test func rejectRefusesWhileAnythingRuns() {
        var q = SessionQueue(maxWaiting: 4)
        do {
            let r = q.submit(id: "a", policy: .reject, priority: .interactive)
            #expect(r == .start)
        }
        do {
            let r = q.submit(id: "b", policy: .reject, priority: .interactive)
            #expect(r == .rejectBusy(active: "a"))
        }
        #expect(q.waitingCount == 0)
    }

    @Test func aFullQueueRefuses() {
        var q = SessionQueue(maxWaiting: 2)
        _ = q.submit(id: "a", policy: .queue, priority: .interactive)
        _ = q.submit(id: "b", policy: .queue, priority: .interactive)
        _ = q.submit(id: "c", policy: .queue, priority: .interactive)
        do {
            let r = q.submit(id: "d", policy: .queue, priority: .interactive)
            #expect(r == .rejectQueueFull(limit: 2))
        }
    }

    @Test func replaceStopsTheActiveOneAndSupersedesEveryOlderWaiter() {
        var q = SessionQueue(maxWaiting: 8)
        _ = q.submit(id: "a", policy: .queue, priority: .interactive)
        _ = q.submit(id: "b", policy: .queue, priority: .interactive)
        _ = q.submit(id: "c", policy: .queue, priority: .background)
        let d = q.submit(id: "d", policy: .replace, priority: .interactive)
        #expect(d == .replace(cancelActive: "a", superseded: ["b", "c"], position: 1))
        #expect(q.ordered.map(\.id) == ["d"])
        // A newer replace supersedes d before it ever ran: the recheck after the await.
        let e = q.submit(id: "e", policy: .replace, priority: .interactive)
        #expect(e == .replace(cancelActive: "a", superseded: ["d"], position: 1))
        do {
            let r = q.activeFinished()
            #expect(r == "e")
        }
    }

    @Test func backgroundStartsOnlyWhenNoInteractiveWaits() {
        var q = SessionQueue(maxWaiting: 8)
        _ = q.submit(id: "run", policy: .queue, priority: .interactive)
        _ = q.submit(id: "bg1", policy: .queue, priority: .background)
        do {
            let r = q.submit(id: "i1", policy: .queue, priority: .interactive)
            #expect(r == .wait(position: 1))
        }
        _ = q.submit(id: "bg2", policy: .queue, priority: .background)
        do {
            let r = q.submit(id: "i2", policy: .queue, priority: .interactive)
            #expect(r == .wait(position: 2))
        }
        #expect(q.ordered.map(\.id) == ["i1", "i2", "bg1", "bg2"])
        do {
            let r = q.activeFinished()
            #expect(r == "i1")
        }
        do {
            let r = q.activeFinished()
            #expect(r == "i2")
        }
        do {
            let r = q.activeFinished()
            #expect(r == "bg1")
        }
    }

    @Test func removingAWaiterMovesTheOthersUp() {
        var q = SessionQueue(maxWaiting: 8)
        _ = q.submit(id: "a", policy: .queue, priority: .interactive)
        _ = q.submit(id: "b", policy: .queue, priority: .interactive)
        _ = q.submit(id: "c", policy: .queue, priority: .interactive)
        do {
            let r = q.remove("b")
            #expect(r)
        }
        do {
            let r = q.remove("b")
            #expect(!r)
        }
        do {
            let r = q.remove("a")
            #expect(!r, "the active request is not waiting")
        }
        #expect(q.position(of: "c") == 1)
    }
}

/// The per-request state machine, including the cancel-versus-complete rule.
@Suite struct TurnLifecycleTests {
    @Test func cancelWhileWaitingRemovesIt() {
        var t = TurnLifecycle()
        do {
            let r = t.cancel(.clientDisconnected)
            #expect(r == .removeFromQueue)
        }
        do {
            let r = t.admit()
            #expect(!r)
        }
        do {
            let r = t.cancel(.cancelRequest)
            #expect(r == .alreadyFinished(.cancelled))
        }
    }

    @Test func cancelAfterAdmissionEndsItBeforeStart() {
        var t = TurnLifecycle()
        do {
            let r = t.admit()
            #expect(r)
        }
        do {
            let r = t.cancel(.superseded)
            #expect(r == .endBeforeStart)
        }
        do {
            let r = t.beginGeneration()
            #expect(!r)
        }
    }

    @Test func aStopRecordedFirstBeatsALateResult() {
        var t = TurnLifecycle()
        _ = t.admit()
        _ = t.beginGeneration()
        do {
            let r = t.cancel(.cancelRequest)
            #expect(r == .stopGeneration)
        }
        do {
            let r = t.cancel(.clientDisconnected)
            #expect(r == .awaitStop, "the first reason stays")
        }
        do {
            let r = t.engineReturned(.success(.stop))
            #expect(r == .cancelled(.cancelRequest))
        }
    }

    @Test func aResultRecordedFirstBeatsALateCancel() {
        var t = TurnLifecycle()
        _ = t.admit()
        _ = t.beginGeneration()
        do {
            let r = t.engineReturned(.success(.length))
            #expect(r == .completed)
        }
        do {
            let r = t.cancel(.cancelRequest)
            #expect(r == .alreadyFinished(.completed))
        }
    }

    @Test func errorsAreNotCancellations() {
        var t = TurnLifecycle()
        _ = t.admit()
        _ = t.beginGeneration()
        do {
            let r = t.engineReturned(.failure(.computeFailed("boom")))
            #expect(r == .failed)
        }
    }
}
