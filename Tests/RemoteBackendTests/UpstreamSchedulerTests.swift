import Engine
import Testing

@testable import RemoteBackend

/// The picker's distribution and limits, and the queue in front of the upstreams.
@Suite struct UpstreamSchedulerTests {
    typealias S = UpstreamScheduler<Int>

    /// Picks `n` generations, each released at once; returns how many each upstream got and the order.
    func picks(_ s: inout S, _ n: Int) -> (counts: [Int], order: [Int]) {
        var counts = Array(repeating: 0, count: s.upstreams.count)
        var order: [Int] = []
        for id in 0..<n {
            guard case .assigned(let i) = s.submit(id, priority: .interactive).0 else {
                Issue.record("generation \(id) was not assigned")
                continue
            }
            counts[i] += 1
            order.append(i)
            _ = s.release(i, held: .milliseconds(10))
        }
        return (counts, order)
    }

    @Test func weightsShareTheTrafficExactlyAndSpreadOut() {
        var s = S(upstreams: [(3, 8), (1, 8)], maxQueue: 0)
        let (counts, order) = picks(&s, 400)
        #expect(counts == [300, 100])
        // Smooth: the weight-1 upstream comes once in every 4 picks, never twice in a row.
        for window in stride(from: 0, to: 400, by: 4) {
            #expect(order[window..<window + 4].filter { $0 == 1 }.count == 1)
        }
        var t = S(upstreams: [(5, 8), (1, 8), (1, 8)], maxQueue: 0)
        let (c, o) = picks(&t, 70)
        #expect(c == [50, 10, 10])
        // Every period of 7 picks holds each light upstream once, apart (not b and c together).
        for window in stride(from: 0, to: 70, by: 7) {
            let period = Array(o[window..<window + 7])
            #expect(period.filter { $0 == 1 }.count == 1 && period.filter { $0 == 2 }.count == 1)
            let b = period.firstIndex(of: 1) ?? 0
            let c = period.firstIndex(of: 2) ?? 0
            #expect(abs(b - c) > 1, "the light upstreams came together: \(period)")
        }
    }

    @Test func aFullUpstreamIsSkippedAndMaxActiveIsNeverExceeded() {
        var s = S(upstreams: [(10, 1), (1, 2)], maxQueue: 5)
        var placed: [Int] = []
        for id in 0..<3 {
            guard case .assigned(let i) = s.submit(id, priority: .interactive).0 else {
                Issue.record("generation \(id) was not placed")
                return
            }
            placed.append(i)
        }
        #expect(placed.sorted() == [0, 1, 1])
        #expect(s.upstreams.map(\.active) == [1, 2])
        #expect(s.submit(3, priority: .interactive).0 == .queued(position: 1))
        // The freed place on upstream 0 goes to the waiter.
        #expect(s.release(0, held: .seconds(1)) == [.assign(3, upstream: 0)])
    }

    @Test func aDownUpstreamGetsNothingAndAllDownIsUnavailableAtOnce() {
        var s = S(upstreams: [(1, 4), (1, 4)], maxQueue: 4)
        #expect(s.setUp(0, false) == [])
        let (counts, _) = picks(&s, 10)
        #expect(counts == [0, 10])
        #expect(s.setUp(1, false) == [])
        #expect(s.submit(99, priority: .interactive).0 == .unavailable)
        #expect(s.setUp(0, true) == [])
        #expect(s.submit(100, priority: .interactive).0 == .assigned(upstream: 0))
    }

    @Test func waitersGoInteractiveFirstAndAreToldWhenTheLastUpstreamGoesDown() {
        var s = S(upstreams: [(1, 1)], maxQueue: 3)
        #expect(s.submit(1, priority: .interactive).0 == .assigned(upstream: 0))
        #expect(s.submit(2, priority: .background).0 == .queued(position: 1))
        // An interactive waiter goes ahead; the background one hears its new place.
        let (decision, moved) = s.submit(3, priority: .interactive)
        #expect(decision == .queued(position: 1))
        #expect(moved == [.position(2, 2)])
        #expect(s.submit(4, priority: .interactive).0 == .queued(position: 2))
        guard case .refused(let length, let retryAfter) = s.submit(5, priority: .interactive).0 else {
            Issue.record("a full queue did not refuse")
            return
        }
        #expect(length == 3)
        #expect(retryAfter >= 1)
        #expect(s.remove(3) == [.position(4, 1), .position(2, 2)])
        #expect(s.remove(3) == nil)
        #expect(s.release(0, held: .seconds(2)) == [.assign(4, upstream: 0), .position(2, 1)])
        #expect(s.setUp(0, false) == [.unavailable(2)])
        #expect(s.waitingCount == 0)
    }

    @Test func anotherTenantsFirstWaiterGoesAheadOfATenantWithManyWaiting() {
        var s = S(upstreams: [(1, 1)], maxQueue: 8)
        #expect(s.submit(0, priority: .interactive, tenant: "A").0 == .assigned(upstream: 0))
        for id in 1...3 { _ = s.submit(id, priority: .interactive, tenant: "A") }
        // A holds the place and waits three times: B's first waiter goes ahead of all three.
        let (decision, moved) = s.submit(10, priority: .interactive, tenant: "B")
        #expect(decision == .queued(position: 1))
        #expect(moved == [.position(1, 2), .position(2, 3), .position(3, 4)])
        #expect(
            s.release(0, held: .seconds(1), tenant: "A") == [
                .assign(10, upstream: 0), .position(1, 1), .position(2, 2), .position(3, 3),
            ])
        // Both wait now: A (holding none once B's ends) and B take turns.
        _ = s.submit(11, priority: .interactive, tenant: "B")
        #expect(s.release(0, held: .seconds(1), tenant: "B").first == .assign(1, upstream: 0))
        #expect(s.release(0, held: .seconds(1), tenant: "A").first == .assign(11, upstream: 0))
    }

    @Test func retargetMovesToAnotherUpstreamAheadOfTheQueue() {
        var s = S(upstreams: [(1, 1), (1, 1)], maxQueue: 2)
        #expect(s.submit(1, priority: .interactive).0 == .assigned(upstream: 0))
        #expect(s.submit(2, priority: .interactive).0 == .assigned(upstream: 1))
        #expect(s.submit(3, priority: .interactive).0 == .queued(position: 1))
        // 1 found upstream 0 unreachable; upstream 1 is full, so it cannot move; 3 gets upstream 0.
        let (next, actions) = s.retarget(from: 0, held: .zero)
        #expect(next == nil)
        #expect(actions == [.assign(3, upstream: 0)])
        var t = S(upstreams: [(1, 1), (1, 1)], maxQueue: 2)
        _ = t.submit(1, priority: .interactive)
        let (moved, none) = t.retarget(from: 0, held: .zero)
        #expect(moved == 1)
        #expect(none.isEmpty)
        #expect(t.upstreams.map(\.active) == [0, 1])
    }

    @Test func retryAfterFollowsTheMeanHoldTimeOverThePlaces() {
        var s = S(upstreams: [(1, 2)], maxQueue: 0)
        #expect(s.retryAfterSeconds == 2)  // no history: 4 s over 2 places
        _ = s.submit(1, priority: .interactive)
        _ = s.release(0, held: .seconds(30))
        #expect(s.retryAfterSeconds == 15)
    }
}
