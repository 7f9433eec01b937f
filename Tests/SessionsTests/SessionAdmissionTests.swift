import Backend
import Engine
import Foundation
import Telemetry
import TestSupport
import Testing
import Timekeeping

@testable import Sessions

/// Sessions over an engine whose places are few: the engine's queue sits behind each session's
/// own, and neither breaks the other's rules.
@Suite struct SessionAdmissionTests {
    @Test func aSessionNeverHasTwoGenerationsInTheEngineThroughItsQueue() async throws {
        let h = try Harness(
            model: FakeModel(stepDelay: 0.001, admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 32)))
        var sessions: [Session] = []
        for _ in 0..<3 { sessions.append(try await h.session()) }
        var tasks: [Task<TurnOutcome, Never>] = []
        var firstTurns: [Recorder] = []
        for (i, s) in sessions.enumerated() {
            for turn in 0..<3 {
                let rec = Recorder()
                if turn == 0 { firstTurns.append(rec) }
                tasks.append(try await h.start(Harness.request("s\(i)-t\(turn)", "p\(turn)", maxTokens: 12), s, rec))
            }
        }
        for t in tasks { #expect(await t.value.status == .completed) }
        for s in sessions {
            #expect(s.probe.maxConcurrent == 1)
            #expect(s.probe.generations == 3)
            #expect(await s.prompts().map(\.content) == ["p0", "p1", "p2"])
        }
        // A session's first turn has nothing ahead of it in its session: a position it heard came
        // from the engine's queue, which the other sessions' turns were holding.
        #expect(firstTurns.contains { !$0.positions.isEmpty })
    }

    /// The test decides time: the waiting turn's deadline passes when the sessions' time source
    /// is advanced past it, never before, however long the turn ahead runs.
    @Test(.timeLimit(.minutes(1))) func aDeadlinePassedInTheSessionQueueEndsTheTurnUnpublished() async throws {
        let clock = ManualTimeSource()
        let h = try Harness(clock: clock)
        let s = try await h.session()
        let a = try await h.start(Harness.request("a", maxTokens: 3000, longRun: true), s)
        let rec = Recorder()
        let late = try await h.start(
            Harness.request("b", "too late", deadline: clock.now + .seconds(40)), s, rec)
        // Its expiry waits for the time source; real time passing while `a` runs does not end it.
        #expect(await clock.waitForSleepers(1))
        #expect(await eventually(timeout: .seconds(60)) { h.model.predictor.computed.load(ordering: .relaxed) > 20 })
        #expect(await s.snapshot(backend: nil).queued == 1)
        clock.advance(by: .seconds(39))
        #expect(clock.sleepers == 1 && !rec.started)
        clock.advance(by: .seconds(1))
        let outcome = await late.value
        // It ended while the turn ahead still ran: at its deadline, not when its turn came.
        #expect(await s.snapshot(backend: nil).activeRequest == "a")
        #expect(outcome.status == .failed && outcome.error == .generation(.queueTimeout))
        #expect(outcome.content.isEmpty && !rec.started)
        #expect(await s.prompts().allSatisfy { $0.content != "too late" })
        _ = await s.cancel(requestID: "a", reason: .cancelRequest)
        #expect(await a.value.status == .cancelled)
        // The session carries on.
        #expect(try await h.respond(Harness.request("c"), s).status == .completed)
    }

    @Test func aDeadlinePassedWhileGeneratingKeepsThePartialAnswer() async throws {
        let h = try Harness()
        let s = try await h.session()
        // 2000 tokens take seconds; the deadline leaves the turn ample time to start first.
        let outcome = try await h.respond(
            Harness.request("a", maxTokens: 2000, longRun: true, deadline: .now + .seconds(1)), s)
        #expect(outcome.status == .completed && outcome.finishReason == .timeout)
        let response = try #require(await s.responses().last)
        #expect(response.status == .completed && response.finishReason == "timeout")
        #expect(response.content == outcome.content)
    }

    @Test func aDeadlinePassedInTheEngineQueueFailsTheTurnAndKeepsTheSessionUsable() async throws {
        let h = try Harness(model: FakeModel(admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 4)))
        let busy = try await h.session()
        let s = try await h.session()
        let a = try await h.start(Harness.request("a", maxTokens: 2000, longRun: true), busy)
        // It holds the engine's only place before the other session's turn asks for one.
        #expect(await eventually { h.model.predictor.computed.load(ordering: .relaxed) > 0 })
        let outcome = try await h.respond(
            Harness.request("b", deadline: .now + .milliseconds(40)), s)
        #expect(outcome.status == .failed && outcome.error == .generation(.queueTimeout))
        _ = await busy.cancel(requestID: "a", reason: .cancelRequest)
        _ = await a.value
        #expect(try await h.respond(Harness.request("c"), s).status == .completed)
    }
}

extension Harness {
    /// A harness whose sessions decide deadlines by `clock` (the engine's runner keeps the system's).
    init(clock: any TimeSource, model: FakeModel = FakeModel()) throws {
        self.model = model
        self.backend = model
        var env = SessionEnvironment(
            store: TranscriptStore.inMemory(), caches: KVCacheBudget(budgetBytes: 1 << 30), maxQueue: 16,
            limits: GenerationLimits(defaultMaxTokens: 64), logger: logs.logger, metrics: Metrics())
        env.clock = clock
        manager = try SessionManager(environment: env, recentRequests: SessionManager.defaultRecentRequests)
    }
}
