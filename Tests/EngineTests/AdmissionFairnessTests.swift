import Synchronization
import Telemetry
import TestSupport
import Testing

@testable import Engine

/// Fair shares between tenants in the admission queue, as pure state (time is an argument) and
/// once through the real worker: a tenant with many waiters cannot keep another tenant's first
/// request behind them, and tenants that all wait take the places in turn.
@Suite struct AdmissionFairnessTests {
    typealias Queue = AdmissionQueue<String>
    let t0 = ContinuousClock.now

    func at(_ ms: Int) -> ContinuousClock.Instant { t0 + .milliseconds(ms) }

    func queue(active: Int, waiting: Int = 32) -> Queue {
        Queue(
            policy: AdmissionPolicy(
                maxActiveSequences: active, maxQueue: waiting, preemptAfter: .milliseconds(500),
                starvationFactor: 4, starvationFloor: .seconds(60), minimumStepsBeforePreemption: 0))
    }

    /// Frees `id`'s place and returns who was admitted to it.
    func finish(_ id: String, in q: inout Queue, at ms: Int) -> [String] {
        q.finished(id, now: at(ms))
        return q.update(now: at(ms)).compactMap { if case .admit(let id) = $0 { id } else { nil } }
    }

    @Test func aKeyWithTenWaitingCannotKeepAnotherKeysFirstRequestBehindThem() {
        var q = queue(active: 2)
        for i in 0..<12 {
            _ = q.submit("a\(i)", priority: .interactive, tenant: "A", deadline: nil, now: at(i))
        }
        #expect(q.runningCount == 2 && q.waitingCount == 10)
        // First come, first served would make it 11th.
        let decision = q.submit("b0", priority: .interactive, tenant: "B", deadline: nil, now: at(20))
        #expect(decision == .queued(position: 1))
        #expect(q.order(at: at(21)).prefix(3) == ["b0", "a2", "a3"])
        // The next free place is B's.
        #expect(finish("a0", in: &q, at: 30) == ["b0"])
        #expect(q.runningCount(of: "B") == 1 && q.runningCount(of: "A") == 1)
        // Then A's waiters in their own order.
        #expect(finish("b0", in: &q, at: 40) == ["a2"])
        #expect(finish("a1", in: &q, at: 50) == ["a3"])
    }

    @Test func waitersHearTheirFairPositions() {
        var q = queue(active: 1)
        _ = q.submit("a0", priority: .interactive, tenant: "A", deadline: nil, now: at(0))
        _ = q.submit("a1", priority: .interactive, tenant: "A", deadline: nil, now: at(1))
        _ = q.submit("a2", priority: .interactive, tenant: "A", deadline: nil, now: at(2))
        var actions = q.update(now: at(3))
        #expect(actions == [.position("a1", 1), .position("a2", 2)])
        _ = q.submit("b0", priority: .interactive, tenant: "B", deadline: nil, now: at(4))
        actions = q.update(now: at(5))
        #expect(actions == [.position("b0", 1), .position("a1", 2), .position("a2", 3)])
        // Nothing changed: nothing told, nothing built.
        actions = q.update(now: at(6))
        #expect(actions == [])
    }

    @Test func tenantsThatAllWaitTakeThePlacesInTurn() {
        var q = queue(active: 1)
        _ = q.submit("c", priority: .interactive, tenant: "C", deadline: nil, now: at(0))
        for i in 0..<4 { _ = q.submit("a\(i)", priority: .interactive, tenant: "A", deadline: nil, now: at(1 + i)) }
        for i in 0..<4 { _ = q.submit("b\(i)", priority: .interactive, tenant: "B", deadline: nil, now: at(10 + i)) }
        let expected = ["a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"]
        #expect(q.order(at: at(20)) == expected)
        var admitted: [String] = []
        var running = "c"
        for step in 0..<8 {
            let next = finish(running, in: &q, at: 100 + step)
            admitted += next
            running = next.first ?? running
        }
        #expect(admitted == expected)
    }

    @Test func theTenantHoldingFewestPlacesGoesFirst() {
        var q = queue(active: 3)
        _ = q.submit("a0", priority: .interactive, tenant: "A", deadline: nil, now: at(0))
        _ = q.submit("a1", priority: .interactive, tenant: "A", deadline: nil, now: at(1))
        _ = q.submit("b0", priority: .interactive, tenant: "B", deadline: nil, now: at(2))
        _ = q.submit("a2", priority: .interactive, tenant: "A", deadline: nil, now: at(3))
        _ = q.submit("b1", priority: .interactive, tenant: "B", deadline: nil, now: at(4))
        // A holds two places and B one: B's waiter is next although A's came first.
        #expect(q.order(at: at(5)) == ["b1", "a2"])
        // b0 ends: B holds none, A two; B again.
        _ = q.submit("b2", priority: .interactive, tenant: "B", deadline: nil, now: at(6))
        #expect(finish("b0", in: &q, at: 10) == ["b1"])
        // A holds two, B one: B's b2 next, then A's.
        #expect(q.order(at: at(11)) == ["b2", "a2"])
    }

    @Test func priorityStillComesBeforeFairness() {
        var q = queue(active: 1)
        _ = q.submit("x", priority: .interactive, tenant: "B", deadline: nil, now: at(0))
        _ = q.submit("bgA", priority: .background, tenant: "A", deadline: nil, now: at(1))
        _ = q.submit("i1", priority: .interactive, tenant: "B", deadline: nil, now: at(2))
        _ = q.submit("i2", priority: .interactive, tenant: "B", deadline: nil, now: at(3))
        // B holds the place, but its interactive waiters go before A's background one.
        #expect(q.order(at: at(4)) == ["i1", "i2", "bgA"])
    }

    @Test func aTenantComingBackGoesBeforeOneHoldingAPlace() {
        var q = queue(active: 1)
        _ = q.submit("a0", priority: .interactive, tenant: "A", deadline: nil, now: at(0))
        _ = q.submit("b0", priority: .interactive, tenant: "B", deadline: nil, now: at(1))
        _ = q.submit("b1", priority: .interactive, tenant: "B", deadline: nil, now: at(2))
        #expect(finish("a0", in: &q, at: 10) == ["b0"])
        // A comes back after its place ended: it holds none, B holds one.
        _ = q.submit("a1", priority: .interactive, tenant: "A", deadline: nil, now: at(11))
        #expect(q.order(at: at(12)) == ["a1", "b1"])
        // A waiter cancelled or expired leaves nothing behind either.
        let removed = q.remove("a1")
        #expect(removed)
        #expect(q.order(at: at(13)) == ["b1"])
    }

    @Test func theStarvedBackgroundPlaceGoesToTheFairChoice() {
        var q = Queue(
            policy: AdmissionPolicy(
                maxActiveSequences: 1, maxQueue: 16, preemptAfter: .milliseconds(500), starvationFactor: 4,
                starvationFloor: .zero, minimumStepsBeforePreemption: 100))
        _ = q.submit("i0", priority: .interactive, tenant: "A", deadline: nil, now: at(0))
        _ = q.submit("bgA", priority: .background, tenant: "A", deadline: nil, now: at(0))
        _ = q.submit("bgB", priority: .background, tenant: "B", deadline: nil, now: at(1))
        _ = q.submit("i1", priority: .interactive, tenant: "A", deadline: nil, now: at(2))
        // Starved (2 s): a background waiter goes first, and of the two it is B's (A holds the place).
        #expect(q.order(at: at(2001)) == ["bgB", "i1", "bgA"])
        #expect(finish("i0", in: &q, at: 2001) == ["bgB"])
    }

    @Test func rotationOrderCountsEachPlacingForTheNext() {
        var r = TenantRotation()
        r.placed("A")
        r.placed("A")
        // A holds two: C and B go first (in their first waiters' order), then C and B again (each
        // holding one now, C placed longer ago), then A's.
        var sim = r
        #expect(sim.order(of: ["A", "A", "C", "B", "B", "C"]) == [2, 3, 5, 4, 0, 1])
        #expect(r.next(among: ["A", "A", "C", "B"]) == 2)
        #expect(r.next(among: [String]()) == nil)
        r.released("A", stillWaiting: false)
        r.released("A", stillWaiting: false)
        #expect(r.holding("A") == 0)
        // Forgotten: A ranks as never placed again, before B placed once.
        r.placed("B")
        r.released("B", stillWaiting: true)
        #expect(r.next(among: ["B", "A"]) == 1)
    }

    /// Through the real worker: the engine reads the request's tenant.
    @Test func theWorkerPlacesAnotherTenantsFirstRequestNext() async throws {
        let p = ScriptedPredictor(
            script: String(repeating: "z", count: 4000), contextLength: 1_000_000, stepDelay: .milliseconds(1))
        let runner = p.runner(admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 16))
        defer { runner.shutdown() }
        func request(_ label: String, tenant: String, tokens: Int) -> GenerationRequest {
            var r = GenerationRequest(
                promptTokens: ScriptedPredictor.prompt(label), maxTokens: tokens, sampling: .greedy, label: label)
            r.scope = GenerationScope(tenant: tenant)
            r.ignoreEndOfGeneration = true
            return r
        }
        let finished = Locked<[String]>([])
        let first = try runner.submit(request("a0", tenant: "A", tokens: 500_000))
        var waiting: [GenerationTicket] = []
        for i in 1...5 {
            let label = "a\(i)"
            waiting.append(try runner.submit(request(label, tenant: "A", tokens: 4)))
        }
        let positionsOfB = Locked<[Int]>([])
        let (queued, told) = AsyncStream<Void>.makeStream()
        let b = try runner.submit(request("b0", tenant: "B", tokens: 4)) { e in
            if case .queued(let position) = e {
                positionsOfB.withLock { $0.append(position) }
                told.yield()
            }
        }
        // The worker tells B its place between a0's steps; cancelling a0 before that could end
        // it in the same turn that admits B, with no place ever told (seen once under load).
        for await _ in queued { break }
        first.cancel()
        _ = try await first.result()
        let all = waiting.enumerated().map { ($0.offset + 1, $0.element) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                _ = try? await b.result()
                finished.withLock { $0.append("b0") }
            }
            for (i, ticket) in all {
                group.addTask {
                    _ = try? await ticket.result()
                    finished.withLock { $0.append("a\(i)") }
                }
            }
        }
        // B waited first in line (first come, first served: 6th) and ran first.
        #expect(positionsOfB.withLock { $0 }.first == 1)
        #expect(finished.withLock { $0 }.first == "b0")
    }
}
