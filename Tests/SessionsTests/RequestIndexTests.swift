import TestSupport
import Testing

@testable import Sessions

/// The request-id → session index is bounded: a request is indexed while it lives and among the
/// few most recently ended, and no longer (it used to keep every id ever seen).
@Suite struct RequestIndexTests {
    @Test func endedRequestsAreKeptUpToTheCapacityOnly() {
        var index = RequestIndex(endedCapacity: 2)
        for r in ["a", "b", "c"] {
            let added = index.admitted(r, session: "s1")
            #expect(added)
        }
        #expect(index.count == 3 && index.session(for: "a") == "s1")
        for r in ["a", "b", "c"] { index.ended(r) }
        #expect(index.count == 2)
        #expect(index.session(for: "a") == nil && index.session(for: "b") == "s1" && index.session(for: "c") == "s1")
        // Many more: the count never passes live + capacity.
        for i in 0..<1000 {
            let added = index.admitted("r\(i)", session: "s2")
            #expect(added)
            index.ended("r\(i)")
            #expect(index.count <= 2)
        }
        #expect(index.session(for: "r999") == "s2" && index.session(for: "r997") == nil)
    }

    @Test func aLiveIdIsNotDisplacedAndARefusedOneLeavesNoTrace() {
        var index = RequestIndex(endedCapacity: 4)
        let first = index.admitted("a", session: "s1")
        let again = index.admitted("a", session: "s2")
        #expect(first && !again)
        #expect(index.session(for: "a") == "s1")
        let b = index.admitted("b", session: "s1")
        #expect(b)
        index.refused("b")
        #expect(index.session(for: "b") == nil && index.count == 1)
        index.removeSession("s1")
        #expect(index.count == 0)
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
        #expect(h.manager.session(forRequest: "r5")?.id == s.id)
        #expect(h.manager.session(forRequest: "r4")?.id == s.id)
        #expect(h.manager.session(forRequest: "r1") == nil)
        // The session still answers for an old request from its own transcript.
        #expect(await s.cancel(requestID: "r1", reason: .cancelRequest)?.outcome.status == .completed)
        _ = try await h.manager.delete(s.id)
        #expect(h.manager.indexedRequests == 0)
    }
}
