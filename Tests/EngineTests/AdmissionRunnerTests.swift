import Foundation
import Synchronization
import Telemetry
import TestSupport
import Testing
import Timekeeping

@testable import Engine

/// The admission queue inside the real worker, over the scripted predictor: capacity, queue
/// positions, cancellation and deadlines while waiting, refusal, preemption and resumption.
/// Outcomes only: nothing here asserts how long anything took.
@Suite struct AdmissionRunnerTests {
    typealias Collected = GenerationTests.Collected

    /// A generation that runs until it is stopped: its budget takes many minutes, so it is still
    /// running however long this test's Task waits to be scheduled (the numeric suites beside it
    /// can hold the cooperative threads for seconds).
    static func endless(_ label: String, priority: GenerationPriority = .interactive) -> GenerationRequest {
        var r = GenerationRequest(
            promptTokens: ScriptedPredictor.prompt(label), maxTokens: 500_000, sampling: .greedy, label: label)
        r.priority = priority
        r.ignoreEndOfGeneration = true
        return r
    }

    static func slowPredictor() -> ScriptedPredictor {
        ScriptedPredictor(
            script: String(repeating: "z", count: 4000), contextLength: 1_000_000, stepDelay: .milliseconds(2))
    }

    @Test func noMoreThanMaxActiveSequencesAreSteppedAtOnce() async throws {
        let p = ScriptedPredictor(script: String(repeating: "m", count: 64), stepDelay: .milliseconds(2))
        let runner = p.runner(admission: AdmissionPolicy(maxActiveSequences: 2, maxQueue: 8))
        defer { runner.shutdown() }
        let seen = (0..<5).map { _ in Collected() }
        let tickets = try (0..<5).map { i in
            try runner.submit(
                GenerationRequest(promptTokens: ScriptedPredictor.prompt("p\(i)"), maxTokens: 30, sampling: .greedy),
                onEvent: seen[i].record)
        }
        for t in tickets {
            let r = try await t.result()
            #expect(r.content == String(repeating: "m", count: 30) && r.finishReason == .length)
        }
        #expect(p.maxOverlappingSequences == 2)
        #expect(p.batches.withLock { $0 }.allSatisfy { $0 <= 2 })
        // The last one waited behind three others and heard each move.
        let positions = seen[4].positions.withLock { $0 }
        #expect(positions.first == 3 && positions.last == 1)
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 > $1 })
        #expect(seen[0].positions.withLock { $0 }.isEmpty)
    }

    @Test func aRequestCancelledWhileQueuedEndsAtOnceWithoutComputingAndTheOthersMoveUp() async throws {
        let p = Self.slowPredictor()
        let runner = p.runner(admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 8))
        defer { runner.shutdown() }
        let running = try runner.submit(Self.endless("a"))
        let waiting = Collected()
        let next = Collected()
        let cancelled = Task {
            try await runner.generate(
                GenerationRequest(promptTokens: ScriptedPredictor.prompt("b"), maxTokens: 8, sampling: .greedy),
                onEvent: waiting.record)
        }
        #expect(await eventually { waiting.positions.withLock { $0 } == [1] })
        let third = try runner.submit(
            GenerationRequest(promptTokens: ScriptedPredictor.prompt("c"), maxTokens: 4, sampling: .greedy),
            onEvent: next.record)
        #expect(await eventually { next.positions.withLock { $0 } == [2] })
        cancelled.cancel()
        let r = try await cancelled.value
        #expect(r.finishReason == .cancelled && r.content.isEmpty && r.usage.completionTokens == 0)
        // Only the running generation's sequence was ever computed.
        #expect(Set(p.sequencesCalled.withLock { $0 }).count == 1)
        #expect(await eventually { next.positions.withLock { $0 } == [2, 1] })
        running.cancel()
        #expect(try await running.result().finishReason == .cancelled)
        let last = try await third.result()
        #expect(last.content == "zzzz")
    }

    @Test func aFullQueueRefusesAtOnceWithARetryEstimate() async throws {
        let p = Self.slowPredictor()
        let metrics = Metrics()
        let runner = p.runner(admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 1), metrics: metrics)
        defer { runner.shutdown() }
        let a = try runner.submit(Self.endless("a"))
        let b = try runner.submit(Self.endless("b"))
        #expect(throws: GenerationError.self) { try runner.checkCapacity() }
        do {
            _ = try runner.submit(Self.endless("c"))
            Issue.record("a request beyond max_queue must be refused")
        } catch .serverBusy(let length, let retryAfter) {
            #expect(length == 1 && retryAfter >= 1)
        } catch {
            Issue.record("unexpected \(error)")
        }
        await #expect(throws: GenerationError.self) { _ = try await runner.generate(Self.endless("d")) }
        // checkCapacity's refusal counts too: it refuses a request as well.
        #expect(metrics.value("inferd_server_busy_total") == 3)
        #expect(metrics.value("inferd_active_sequences") == 1)
        #expect(metrics.value("inferd_queue_length") == 1)
        b.cancel()
        a.cancel()
        #expect(try await b.result().finishReason == .cancelled)
        #expect(try await a.result().finishReason == .cancelled)
        #expect(await eventually { metrics.value("inferd_active_sequences") == 0 })
        #expect(metrics.value("inferd_queue_length") == 0)
    }

    /// The test decides time: a deadline passes when the manual time source is advanced past it,
    /// however long the machine takes to get there, and never before.
    @Test(.timeLimit(.minutes(1))) func aDeadlinePassedWhileWaitingIsAnErrorAndWhileRunningATimeout() async throws {
        let p = Self.slowPredictor()
        let metrics = Metrics()
        let clock = ManualTimeSource()
        let runner = p.runner(
            admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 4), metrics: metrics, clock: clock)
        defer { runner.shutdown() }
        let stepsOfA = Locked(0)
        let a = try runner.submit(Self.endless("a")) { e in
            if case .snapshot = e { stepsOfA.withLock { $0 += 1 } }
        }
        var waiting = Self.endless("b")
        waiting.deadline = clock.now + .seconds(30)
        let positions = Locked<[Int]>([])
        let b = try runner.submit(waiting) { e in
            if case .queued(let position) = e { positions.withLock { $0.append(position) } }
        }
        #expect(await eventually { positions.withLock { $0 } == [1] })
        // Real time passes while `a` runs, and `b` still waits: only its time source ends it.
        #expect(await eventually { stepsOfA.withLock { $0 } > 20 })
        #expect(metrics.value("inferd_generation_timeouts_total", labels: ["stage": "queue"]) == 0)
        clock.advance(by: .seconds(29))
        // Rounds after the advance applied the queue's deadlines as of the new time.
        let seen = stepsOfA.withLock { $0 }
        #expect(await eventually { stepsOfA.withLock { $0 } > seen + 5 })
        #expect(metrics.value("inferd_generation_timeouts_total", labels: ["stage": "queue"]) == 0)
        clock.advance(by: .seconds(1))
        await #expect(throws: GenerationError.queueTimeout) { _ = try await b.result() }
        #expect(metrics.value("inferd_generation_timeouts_total", labels: ["stage": "queue"]) == 1)
        a.cancel()
        _ = try await a.result()

        var running = Self.endless("c")
        running.deadline = clock.now + .seconds(60)
        let snapshots = Locked(0)
        let c = try runner.submit(running) { e in
            if case .snapshot = e { snapshots.withLock { $0 += 1 } }
        }
        #expect(await eventually { snapshots.withLock { $0 } >= 3 })
        clock.advance(by: .seconds(60))
        let r = try await c.result()
        #expect(r.finishReason == .timeout)
        #expect(r.usage.completionTokens < running.maxTokens)
        #expect(r.content == String(repeating: "z", count: r.content.count))
        #expect(metrics.value("inferd_generation_timeouts_total", labels: ["stage": "running"]) == 1)
    }

    @Test func cancellingOneGenerationMidBatchLeavesTheOthersIntact() async throws {
        let p = ScriptedPredictor(
            script: String(repeating: "abcdefgh", count: 8), contextLength: 1_000_000, stepDelay: .milliseconds(2))
        let runner = p.runner(admission: AdmissionPolicy(maxActiveSequences: 3, maxQueue: 0))
        defer { runner.shutdown() }
        let request = { (label: String, tokens: Int) in
            var r = GenerationRequest(
                promptTokens: ScriptedPredictor.prompt(label), maxTokens: tokens, sampling: .greedy)
            r.ignoreEndOfGeneration = true
            return r
        }
        let seen = Collected()
        let a = try runner.submit(request("a", 64))
        // Long enough to be cancelled mid-way however slowly this test's Task is scheduled.
        let b = try runner.submit(request("b", 500_000), onEvent: seen.record)
        let c = try runner.submit(request("c", 64))
        #expect(await eventually { seen.all.count >= 5 })
        b.cancel()
        let rb = try await b.result()
        #expect(rb.finishReason == .cancelled && rb.stepsAfterCancel <= 1 && rb.usage.completionTokens < 500_000)
        for t in [a, c] {
            let r = try await t.result()
            #expect(r.finishReason == .length && r.content == String(repeating: "abcdefgh", count: 8))
        }
        #expect(p.batches.withLock { $0 }.contains(3))
    }

    @Test func aParkedBackgroundGenerationResumesWithExactlyTheTokensOfAnUninterruptedRun() async throws {
        var sampling = SamplingOptions()
        sampling.temperature = 3
        sampling.topK = 0
        sampling.topP = 1
        sampling.minP = 0
        sampling.seed = 7
        var background = GenerationRequest(
            promptTokens: ScriptedPredictor.prompt("bg"), maxTokens: 120, sampling: sampling, label: "bg")
        background.priority = .background
        background.ignoreEndOfGeneration = true

        let alone = ScriptedPredictor(script: "steady", stepDelay: .milliseconds(1))
        let aloneRunner = alone.runner()
        let reference = try await aloneRunner.generate(background)
        aloneRunner.shutdown()

        let p = ScriptedPredictor(script: "steady", stepDelay: .milliseconds(1))
        let metrics = Metrics()
        let runner = p.runner(
            admission: AdmissionPolicy(
                maxActiveSequences: 1, maxQueue: 4, preemptAfter: .zero, starvationFloor: .seconds(600),
                minimumStepsBeforePreemption: 4),
            metrics: metrics)
        defer { runner.shutdown() }
        let seen = Collected()
        // Submitted together: the interactive one waits, overdue at once, until the background
        // one has made its minimum steps; then it takes the place.
        let parked = try runner.submit(background, onEvent: seen.record)
        let interactive = try runner.submit(
            GenerationRequest(promptTokens: ScriptedPredictor.prompt("now"), maxTokens: 6, sampling: .greedy))
        #expect(try await interactive.result().content == "steady")
        let resumed = try await parked.result()
        #expect(metrics.value("inferd_preemptions_total") == 1)
        // It was told it waits again once parked.
        #expect(seen.positions.withLock { $0 } == [1])
        #expect(resumed.finishReason == .length)
        #expect(resumed.tokens == reference.tokens)
        #expect(resumed.content == reference.content)
    }

    @Test func shutdownEndsRunningAndWaitingGenerationsAsCancelled() async throws {
        let p = Self.slowPredictor()
        let runner = p.runner(admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 4))
        let a = try runner.submit(Self.endless("a"))
        let b = try runner.submit(Self.endless("b"))
        runner.shutdown()
        #expect(try await a.result().finishReason == .cancelled)
        #expect(try await b.result().finishReason == .cancelled)
        #expect(throws: GenerationError.shuttingDown) { _ = try runner.submit(Self.endless("c")) }
    }
}

/// Polls `condition` until it holds or `timeout` passes (a bound for a stuck test, not a timing check).
private func eventually(timeout: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}
