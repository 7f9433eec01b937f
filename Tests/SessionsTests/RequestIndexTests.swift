import TestSupport
import Testing

@testable import Sessions

/// The request-id → session index is bounded: a request is indexed while it lives and among the
/// few most recently ended, and no longer (it used to keep every id ever seen).
@Suite struct RequestIndexTests {
    @Test func endedRequestsAreKeptUpToTheCapacityOnly() {
        var index = RequestIndex(endedCapacity: 2)
        for r in ["a", "b", "c"] {
            let added = index.admitted(r, owner: nil, session: "s1")
            #expect(added)
        }
        #expect(index.count == 3 && index.session(for: "a", owner: nil) == "s1")
        for r in ["a", "b", "c"] { index.ended(r, owner: nil) }
        #expect(index.count == 2)
        #expect(
            index.session(for: "a", owner: nil) == nil && index.session(for: "b", owner: nil) == "s1"
                && index.session(for: "c", owner: nil) == "s1")
        // Many more: the count never passes live + capacity.
        for i in 0..<1000 {
            let added = index.admitted("r\(i)", owner: nil, session: "s2")
            #expect(added)
            index.ended("r\(i)", owner: nil)
            #expect(index.count <= 2)
        }
        #expect(index.session(for: "r999", owner: nil) == "s2" && index.session(for: "r997", owner: nil) == nil)
    }

    @Test func aLiveIdIsNotDisplacedAndARefusedOneLeavesNoTrace() {
        var index = RequestIndex(endedCapacity: 4)
        let first = index.admitted("a", owner: nil, session: "s1")
        let again = index.admitted("a", owner: nil, session: "s2")
        #expect(first && !again)
        #expect(index.session(for: "a", owner: nil) == "s1")
        let b = index.admitted("b", owner: nil, session: "s1")
        #expect(b)
        index.refused("b", owner: nil)
        #expect(index.session(for: "b", owner: nil) == nil && index.count == 1)
        index.removeSession("s1")
        #expect(index.count == 0)
    }

    /// Each owner has its own namespace: one owner taking an id first neither blocks nor hides
    /// another owner's request with the same id, and ending one leaves the other live.
    @Test func idsAreScopedByOwner() {
        var index = RequestIndex(endedCapacity: 4)
        let a = index.admitted("x", owner: "key-a", session: "s-a")
        let b = index.admitted("x", owner: "key-b", session: "s-b")
        #expect(a && b)
        #expect(index.session(for: "x", owner: "key-a") == "s-a")
        #expect(index.session(for: "x", owner: "key-b") == "s-b")
        #expect(index.session(for: "x", owner: nil) == nil && index.session(for: "x", owner: "key-c") == nil)
        index.ended("x", owner: "key-a")
        #expect(index.live.count == 1 && index.session(for: "x", owner: "key-b") == "s-b")
        index.removeSession("s-b")
        #expect(index.session(for: "x", owner: "key-b") == nil && index.session(for: "x", owner: "key-a") == "s-a")
    }

    /// Over real sessions: finished turns leave the live index, only the most recent stay findable.
    @Test func theManagersIndexIsBoundedOverRealTurns() async throws {
        // The backend is not the subject: a scripted one answers at once.
        let h = try Harness(backend: ScriptedBackend(reply: "ok"), recentRequests: 2)
        let s = try await h.session()
        for i in 1...5 {
            let outcome = try await h.respond(Harness.request("r\(i)", "hi \(i)"), s)
            #expect(outcome.status == .completed)
        }
        #expect(h.manager.indexedRequests == 2)
        #expect(h.manager.session(forRequest: "r5", owner: nil)?.id == s.id)
        #expect(h.manager.session(forRequest: "r4", owner: nil)?.id == s.id)
        #expect(h.manager.session(forRequest: "r1", owner: nil) == nil)
        // The session still answers for an old request from its own transcript.
        #expect(await s.cancel(requestID: "r1", reason: .cancelRequest)?.outcome.status == .completed)
        _ = try await h.manager.delete(s.id)
        #expect(h.manager.indexedRequests == 0)
    }
}
