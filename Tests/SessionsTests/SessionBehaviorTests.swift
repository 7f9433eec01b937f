import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import Sessions

/// The session semantics over the fake model and the real generation runner.
@Suite struct SessionBehaviorTests {
    @Test func turnsRunInOrderAndReuseTheKVCache() async throws {
        let h = try Harness()
        let s = try await h.session()
        let first = try await h.respond(Harness.request("r1", "hi"), s)
        #expect(first.status == .completed && first.content == "The quic")
        #expect(first.usage?.cachedTokens == 0)
        let second = try await h.respond(Harness.request("r2", "again"), s)
        #expect(second.status == .completed)
        // Everything up to the end of the first answer came from the cache.
        let firstPrompt = first.usage!.promptTokens
        #expect(second.usage!.cachedTokens >= firstPrompt + 8 - 1)
        #expect(await s.responses().map(\.content) == ["The quic", "The quic"])
        #expect(s.probe.maxConcurrent == 1)
    }

    @Test func queuedRequestsStartInArrivalOrderAndHearTheirPosition() async throws {
        let h = try Harness()
        let s = try await h.session()
        let recs = (0..<3).map { _ in Recorder() }
        var tasks: [Task<TurnOutcome, Never>] = []
        for i in 0..<3 { tasks.append(try await h.start(Harness.request("q\(i)", "p\(i)", maxTokens: 6), s, recs[i])) }
        var outcomes: [TurnOutcome] = []
        for t in tasks { outcomes.append(await t.value) }
        #expect(outcomes.allSatisfy { $0.status == .completed })
        #expect(await s.prompts().map(\.content) == ["p0", "p1", "p2"])
        #expect(recs[2].positions.first == 2)
        #expect(recs[2].positions.last == 1)
        #expect(s.probe.maxConcurrent == 1)
    }

    @Test func rejectAnswersBusyWhileOneRuns() async throws {
        let h = try Harness()
        let s = try await h.session(onBusy: .reject)
        let running = try await h.start(Harness.request("a", maxTokens: 3000, longRun: true), s)
        await #expect(throws: SessionError.busy(activeRequest: "a")) {
            try await h.admit(Harness.request("b", onBusy: .reject), s)
        }
        _ = await s.cancel(requestID: "a", reason: .cancelRequest)
        #expect(await running.value.status == .cancelled)
    }

    @Test func aFullQueueIsRefused() async throws {
        let h = try Harness(maxQueue: 1)
        let s = try await h.session()
        let a = try await h.start(Harness.request("a", maxTokens: 3000, longRun: true), s)
        let b = try await h.start(Harness.request("b"), s)
        await #expect(throws: SessionError.queueFull(limit: 1)) { try await h.admit(Harness.request("c"), s) }
        _ = await s.cancelAll(reason: .cancelRequest)
        #expect(await a.value.status == .cancelled)
        #expect(await b.value.reason == .cancelRequest)
    }

    @Test func cancelBeforeStartPublishesNothing() async throws {
        let h = try Harness()
        let s = try await h.session()
        let a = try await h.start(Harness.request("a", maxTokens: 3000, longRun: true), s)
        let rec = Recorder()
        let b = try await h.start(Harness.request("b", "never"), s, rec)
        #expect(await eventually { rec.positions == [1] })
        let result = await s.cancel(requestID: "b", reason: .cancelRequest)
        #expect(result == .removed(.cancelledUnstarted("b", session: s.id, reason: .cancelRequest)))
        let outcome = await b.value
        #expect(outcome.status == .cancelled && outcome.content == "" && outcome.reason == .cancelRequest)
        #expect(rec.snapshots.isEmpty && !rec.started)
        // Never accepted: the transcript has no trace of it.
        #expect(await s.prompts().allSatisfy { $0.content != "never" })
        _ = await s.cancel(requestID: "a", reason: .cancelRequest)
        _ = await a.value
    }

    @Test func disconnectWhileQueuedRemovesItAtOnce() async throws {
        let h = try Harness()
        let s = try await h.session()
        let a = try await h.start(Harness.request("a", maxTokens: 3000, longRun: true), s)
        let b = try await h.start(Harness.request("b"), s)
        let recC = Recorder()
        let c = try await h.start(Harness.request("c"), s, recC)
        #expect(await eventually { recC.positions == [2] })
        b.cancel()
        let ob = await b.value
        #expect(ob.status == .cancelled && ob.reason == .clientDisconnected)
        // Removed while a still runs, and c moved up.
        #expect(await eventually { recC.positions == [2, 1] })
        #expect(await s.snapshot(backend: nil).queued == 1)
        #expect(await s.snapshot(backend: nil).activeRequest == "a")
        _ = await s.cancel(requestID: "a", reason: .cancelRequest)
        #expect(await a.value.status == .cancelled)
        #expect(await c.value.status == .completed)
    }

    @Test func stopMidStreamKeepsExactlyTheLastSnapshotAndTheNextTurnSeesIt() async throws {
        let h = try Harness()
        let s = try await h.session()
        let rec = Recorder()
        let a = try await h.start(Harness.request("a", maxTokens: 3000, longRun: true), s, rec)
        #expect(await eventually { rec.snapshots.count >= 5 })
        let result = await s.cancel(requestID: "a", reason: .cancelRequest)
        guard case .stopped(let stopped) = result else {
            Issue.record("expected a stop, got \(String(describing: result))")
            return
        }
        let outcome = await a.value
        #expect(outcome == stopped)
        #expect(outcome.status == .cancelled && outcome.reason == .cancelRequest)
        #expect(outcome.content == rec.snapshots.last)
        #expect(outcome.stepsAfterCancel <= 1)
        let response = try #require(await s.responses().last)
        #expect(response.status == .cancelled && response.content == rec.snapshots.last)
        // The next turn runs on the kept text, reusing the cache without a repeated prefix.
        let next = try await h.respond(Harness.request("b", "go on"), s)
        #expect(next.status == .completed)
        let messages = await s.conversationMessages()
        #expect(messages.filter { $0.role == .assistant }.first?.content == outcome.content)
        #expect(next.usage!.cachedTokens > 0)
    }

    @Test func stopWithDiscardRollsBackTranscriptAndCache() async throws {
        let h = try Harness()
        let s = try await h.session()
        let first = try await h.respond(Harness.request("r1", "hi"), s)
        let before = await s.transcript
        let rec = Recorder()
        let a = try await h.start(Harness.request("a", maxTokens: 3000, onCancel: .discard, longRun: true), s, rec)
        #expect(await eventually { rec.snapshots.count >= 3 })
        _ = await s.cancel(requestID: "a", reason: .cancelRequest)
        let outcome = await a.value
        #expect(outcome.status == .cancelled && outcome.content == rec.snapshots.last)
        #expect(await s.transcript == before)
        // Rolled back: the next turn reuses everything before the discarded one, nothing after.
        let next = try await h.respond(Harness.request("r3", "again"), s)
        #expect(next.usage!.cachedTokens >= first.usage!.promptTokens)
        #expect(await s.prompts().map(\.content) == ["hi", "again"])
    }

    @Test func replaceUnderRapidInputLetsOnlyTheNewestAnswer() async throws {
        let h = try Harness()
        let s = try await h.session(onBusy: .replace)
        var tasks: [Task<TurnOutcome, Never>] = []
        var recs: [Recorder] = []
        for i in 0..<50 {
            let rec = Recorder()
            recs.append(rec)
            tasks.append(
                try await h.start(Harness.request("r\(i)", "input \(i)", maxTokens: 6, onBusy: .replace), s, rec))
        }
        var outcomes: [TurnOutcome] = []
        for t in tasks { outcomes.append(await t.value) }
        #expect(outcomes.filter { $0.status == .completed }.map(\.requestID) == ["r49"])
        for o in outcomes.dropLast() {
            #expect(o.status == .cancelled && o.reason == .superseded && o.content == "", "\(o)")
        }
        // Only the newest reached the transcript; superseded ones leave no turn behind.
        #expect(await s.prompts().map(\.content) == ["input 49"])
        #expect(s.probe.maxConcurrent == 1)
    }

    @Test func cancelAsTheResponseCompletesCancelRecordedFirstWins() async throws {
        let hooks = SessionHooks()
        let paused = PauseGate()
        hooks.beforeRecord = { _ in await paused.wait() }
        let h = try Harness(hooks: hooks)
        let s = try await h.session()
        let rec = Recorder()
        let a = try await h.start(Harness.request("a", maxTokens: 8), s, rec)
        // The engine has finished (completed) but the session has not recorded it yet.
        #expect(await eventually { paused.isWaiting })
        let cancel = Task { await s.cancel(requestID: "a", reason: .cancelRequest) }
        #expect(await eventuallyAsync { await s.isStopping("a") })
        paused.release()
        let result = await cancel.value
        let outcome = await a.value
        #expect(result == .stopped(outcome))
        #expect(outcome.status == .cancelled && outcome.reason == .cancelRequest)
        #expect(outcome.content == rec.snapshots.last)
        let response = try #require(await s.responses().last)
        #expect(response.status == .cancelled && response.content == outcome.content)
    }

    @Test func cancelAsTheResponseCompletesCompletionRecordedFirstWins() async throws {
        let hooks = SessionHooks()
        let paused = PauseGate()
        hooks.afterRecord = { _ in await paused.wait() }
        let h = try Harness(hooks: hooks)
        let s = try await h.session()
        let a = try await h.start(Harness.request("a", maxTokens: 8), s)
        // Recorded as completed, requester not yet told.
        #expect(await eventually { paused.isWaiting })
        let result = await s.cancel(requestID: "a", reason: .cancelRequest)
        paused.release()
        let outcome = await a.value
        #expect(result == .alreadyFinished(outcome))
        #expect(outcome.status == .completed && outcome.content == "The quic")
        #expect(await s.responses().last?.status == .completed)
    }

    @Test func aGenuineEngineFailureTravelsTheErrorPathAndTheSessionStaysUsable() async throws {
        let h = try Harness()
        let s = try await h.session()
        let failed = try await h.respond(Harness.request("bad", "please FAIL now"), s)
        #expect(failed.status == .failed && failed.reason == nil)
        guard case .generation(.computeFailed) = failed.error else {
            Issue.record("expected a compute failure, got \(String(describing: failed.error))")
            return
        }
        #expect(await s.responses().last?.status == .failed)
        let ok = try await h.respond(Harness.request("good", "hi"), s)
        #expect(ok.status == .completed)
        #expect(
            h.manager.environment.metrics.value("inferd_session_errors_total", labels: ["code": "generation_failed"])
                == 1)
        #expect(
            h.manager.environment.metrics.value(
                "inferd_session_cancellations_total", labels: ["reason": "cancel_request"]) == nil)
    }

    @Test func contextOverflowIsRefusedAndTheSessionStaysUsable() async throws {
        let h = try Harness()
        let s = try await h.session()
        await #expect(throws: SessionError.self) {
            try await h.admit(Harness.request("big", "x", maxTokens: 5000), s)
        }
        #expect(await s.transcript.count == 1)
        #expect(try await h.respond(Harness.request("ok", "hi"), s).status == .completed)
    }

    @Test func aQueuedRequestThatNoLongerFitsFailsWithoutTouchingTheTranscript() async throws {
        let h = try Harness(model: FakeModel(contextLength: 120))
        let s = try await h.session()
        let a = try await h.start(Harness.request("a", "hello", maxTokens: 40), s)
        // Fits while a's answer is still empty; no longer fits once a's 40 tokens are in the transcript.
        let b = try await h.start(Harness.request("b", String(repeating: "x", count: 60), maxTokens: 30), s)
        #expect(await a.value.status == .completed)
        let ob = await b.value
        #expect(ob.status == .failed && ob.reason == nil)
        guard case .generation(.contextOverflow) = ob.error else {
            Issue.record("expected context overflow, got \(String(describing: ob.error))")
            return
        }
        #expect(await s.prompts().map(\.content) == ["hello"])
        #expect(try await h.respond(Harness.request("c", "ok", maxTokens: 4), s).status == .completed)
    }

    @Test func aLiveRequestIDMustBeUniqueButAnEndedOneMayBeReused() async throws {
        let h = try Harness()
        let s = try await h.session()
        let a = try await h.start(Harness.request("same", maxTokens: 3000, longRun: true), s)
        await #expect(throws: SessionError.duplicateRequest("same")) { try await h.admit(Harness.request("same"), s) }
        _ = await s.cancel(requestID: "same", reason: .cancelRequest)
        #expect(await a.value.status == .cancelled)
        #expect(try await h.respond(Harness.request("same", "again"), s).status == .completed)
    }

    @Test func backgroundWaitsForInteractive() async throws {
        let h = try Harness()
        let s = try await h.session()
        let a = try await h.start(Harness.request("a", maxTokens: 30), s)
        let bg = try await h.start(Harness.request("bg", "background", priority: .background), s)
        let fg = try await h.start(Harness.request("fg", "interactive"), s)
        _ = await (a.value, bg.value, fg.value)
        #expect(await s.prompts().map(\.content) == ["hello", "interactive", "background"])
    }

    @Test func aDroppedCacheIsRebuiltFromTheTranscript() async throws {
        // Budget for one session's cache: using a second session drops the first's.
        let h = try Harness(budgetBytes: 1100 * 1024)
        let s1 = try await h.session()
        let s2 = try await h.session()
        _ = try await h.respond(Harness.request("a1", "hi"), s1)
        _ = try await h.respond(Harness.request("b1", "hi"), s2)
        #expect(h.manager.environment.caches.evictions >= 1)
        let again = try await h.respond(Harness.request("a2", "more"), s1)
        #expect(again.status == .completed && again.usage?.cachedTokens == 0)
        #expect(await s1.responses().map(\.status) == [.completed, .completed])
    }

    @Test func noOverlappingGenerationsUnderConcurrentClientsWithRandomDisconnects() async throws {
        let h = try Harness()
        let s = try await h.session()
        var rng = SeededGenerator(seed: 7)
        await withTaskGroup(of: Void.self) { group in
            for c in 0..<8 {
                let delays = (0..<4).map { _ in Int.random(in: 0...30, using: &rng) }
                group.addTask {
                    for (i, delay) in delays.enumerated() {
                        let r = Harness.request("c\(c)-\(i)", "client \(c)", maxTokens: 10)
                        guard let t = try? await h.start(r, s) else { continue }
                        if delay % 3 == 0 {
                            try? await Task.sleep(for: .milliseconds(delay))
                            t.cancel()
                        }
                        _ = await t.value
                    }
                }
            }
        }
        #expect(s.probe.maxConcurrent == 1)
        #expect(s.probe.generations > 0)
        #expect(await s.snapshot(backend: nil).responding == false)
    }
}

@Suite struct SessionLifecycleTests {
    @Test func deletingASessionCancelsAndAwaitsWhatRunsOrWaits() async throws {
        let h = try Harness()
        let s = try await h.session()
        let rec = Recorder()
        let a = try await h.start(Harness.request("a", maxTokens: 3000, longRun: true), s, rec)
        let b = try await h.start(Harness.request("b"), s)
        #expect(await eventually { !rec.snapshots.isEmpty })
        #expect(try await h.manager.delete(s.id))
        // Both ended before delete returned: nothing runs for a deleted session.
        #expect(s.probe.maxConcurrent == 1)
        #expect(await s.snapshot(backend: nil).responding == false)
        #expect(await a.value.reason == .sessionDeleted)
        #expect(await b.value.reason == .sessionDeleted)
        #expect(h.manager.session(s.id) == nil)
        await #expect(throws: SessionError.sessionNotFound(s.id)) { try await h.admit(Harness.request("c"), s) }
        #expect(try h.manager.environment.store.loadAll().isEmpty)
    }

    @Test func sessionsComeBackFromTheStoreWithInFlightResponsesInterrupted() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-s-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sid: String
        do {
            let h = try Harness(store: try TranscriptStore.open(dataDir: dir))
            let s = try await h.session(instructions: "Remember me.")
            sid = s.id
            #expect(try await h.respond(Harness.request("r1", "hi"), s).status == .completed)
            // Simulate a crash mid-turn: the store holds an accepted prompt whose response never ended.
            try await h.manager.environment.store.beginTurn(
                session: sid, prompt: TranscriptEntry(position: 10, kind: .prompt, content: "lost", requestID: "r2"),
                response: TranscriptEntry(
                    position: 11, kind: .response, content: "", requestID: "r2", status: .inProgress))
        }
        let h = try Harness(store: try TranscriptStore.open(dataDir: dir))
        let s = try #require(h.manager.session(sid))
        #expect(await s.transcript.map(\.kind) == [.instructions, .prompt, .response, .prompt, .response])
        #expect(await s.responses().map(\.status) == [.completed, .interrupted])
        // A late cancel of a request recorded before the restart says how it ended.
        let late = await h.manager.session(forRequest: "r1", owner: nil)?.cancel(
            requestID: "r1", reason: .cancelRequest)
        #expect(late?.outcome.status == .completed)
        // The interrupted turn is not shown to the model; the session goes on.
        let next = try await h.respond(Harness.request("r3", "again"), s)
        #expect(next.status == .completed)
        #expect(
            await s.conversationMessages().map(\.content) == ["Remember me.", "hi", "The quic", "again", "The quic"])
    }
}

/// A pause a test hook waits in until the test releases it.
final class PauseGate: Sendable {
    private let state = Locked<(waiting: Bool, released: Bool, continuation: CheckedContinuation<Void, Never>?)>(
        (false, false, nil))

    var isWaiting: Bool { state.withLock { $0.waiting } }

    func wait() async {
        await withCheckedContinuation { c in
            let resumeNow = state.withLock { s -> Bool in
                if s.released { return true }
                s.waiting = true
                s.continuation = c
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    func release() {
        let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.released = true
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume()
    }
}

extension Session {
    /// Whether a stop has been recorded for a request that is still generating (test probe).
    func isStopping(_ requestID: String) -> Bool { turns[requestID]?.lifecycle.stopReason != nil }
}

func eventuallyAsync(timeout: Duration = .seconds(5), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}
