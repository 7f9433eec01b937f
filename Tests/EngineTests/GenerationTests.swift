import Foundation
import Synchronization
import Telemetry
import Testing

@testable import Engine

@Suite struct GenerationTests {
    final class Collected: Sendable {
        let snapshots = Locked<[String]>([])
        let prompts = Locked<[(Int, Int)]>([])
        let positions = Locked<[Int]>([])
        var all: [String] { snapshots.withLock { $0 } }
        func record(_ e: GenerationEvent) {
            switch e {
            case .queued(let p): positions.withLock { $0.append(p) }
            case .snapshot(let content, _): snapshots.withLock { $0.append(content) }
            case .started(let p, let c): prompts.withLock { $0.append((p, c)) }
            }
        }
    }

    @Test func greedyFollowsTheModelAndStopsAtEndToken() async throws {
        let p = ScriptedPredictor(script: "Héllo, wörld 👋")
        let seen = Collected()
        let result = try await p.runner().generate(
            GenerationRequest(promptTokens: ScriptedPredictor.prompt("hi"), maxTokens: 100, sampling: .greedy),
            onEvent: seen.record)
        #expect(result.content == "Héllo, wörld 👋")
        #expect(result.finishReason == .stop)
        #expect(result.usage.promptTokens == 3)
        #expect(result.usage.completionTokens == "Héllo, wörld 👋".utf8.count + 1)
        #expect(result.tokens.last == ScriptedPredictor.endToken)
        // Snapshots: each the whole answer so far, each extending the one before, never split UTF-8.
        let snaps = seen.all
        #expect(snaps.last == "Héllo, wörld 👋")
        for (a, b) in zip(snaps, snaps.dropFirst()) { #expect(b.hasPrefix(a) && b.count > a.count) }
        #expect(seen.prompts.withLock { $0.count } == 1)
    }

    @Test func maxTokensEndsWithLength() async throws {
        let p = ScriptedPredictor(script: "abcdefghij")
        let result = try await p.runner().generate(
            GenerationRequest(promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 4, sampling: .greedy))
        #expect(result.content == "abcd")
        #expect(result.finishReason == .length)
        #expect(result.usage.completionTokens == 4)
    }

    @Test func stopStringEndsTheAnswerAndIsNeverShown() async throws {
        let p = ScriptedPredictor(script: "one, two, STOP three")
        let seen = Collected()
        let result = try await p.runner().generate(
            GenerationRequest(
                promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 100, sampling: .greedy,
                stop: ["STOP", "never"]),
            onEvent: seen.record)
        #expect(result.content == "one, two, ")
        #expect(result.finishReason == .stop)
        for s in seen.all {
            #expect("one, two, ".hasPrefix(s), "snapshot \(s) shows text past the stop string")
        }
    }

    @Test func heldBackTextIsReleasedWhenItIsNotAStopString() async throws {
        let p = ScriptedPredictor(script: "a STAR")
        let result = try await p.runner().generate(
            GenerationRequest(
                promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 100, sampling: .greedy, stop: ["STOP"]))
        #expect(result.content == "a STAR")
    }

    @Test func contextOverflowIsATypedErrorWithBothCounts() async throws {
        let p = ScriptedPredictor(script: "abc", contextLength: 16)
        await #expect(throws: GenerationError.contextOverflow(promptTokens: 11, maxTokens: 10, contextLength: 16)) {
            _ = try await p.runner().generate(
                GenerationRequest(promptTokens: ScriptedPredictor.prompt("0123456789"), maxTokens: 10))
        }
        #expect(p.calls.withLock { $0.isEmpty })
    }

    @Test func badOptionIsATypedError() async throws {
        var options = SamplingOptions()
        options.topP = 0
        let p = ScriptedPredictor(script: "abc")
        await #expect(throws: GenerationError.invalidOption(name: "top_p", reason: "must be in (0, 1]")) {
            _ = try await p.runner().generate(
                GenerationRequest(promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 4, sampling: options))
        }
    }

    @Test func longPromptsAreProcessedInChunksOfAtMost64() async throws {
        let p = ScriptedPredictor(script: "ok")
        let prompt = ScriptedPredictor.prompt(String(repeating: "z", count: 150))
        _ = try await p.runner().generate(GenerationRequest(promptTokens: prompt, maxTokens: 8, sampling: .greedy))
        let calls = p.calls.withLock { $0 }
        #expect(Array(calls.prefix(3)) == [64, 64, 23])
        #expect(calls.dropFirst(3).allSatisfy { $0 == 1 })
    }

    @Test func cancellationStopsWithinOneStepAndIsNotAnError() async throws {
        let p = ScriptedPredictor(script: String(repeating: "x", count: 400), stepDelay: .milliseconds(10))
        let runner = p.runner()
        let seen = Collected()
        let task = Task {
            try await runner.generate(
                GenerationRequest(promptTokens: ScriptedPredictor.prompt("go"), maxTokens: 400, sampling: .greedy),
                onEvent: seen.record)
        }
        // Let it produce a few snapshots (however loaded the machine is), then stop it.
        for _ in 0..<2000 where seen.all.count < 5 { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        // Read after cancel(): a step already past its cancellation check may still start.
        let callsAtCancel = p.calls.withLock { $0.count }
        let result = try await task.value
        // generate returned only after the engine stopped: nothing in flight, nothing more runs.
        #expect(p.inFlight.load(ordering: .relaxed) == 0)
        let callsAtReturn = p.calls.withLock { $0.count }
        try await Task.sleep(for: .milliseconds(50))
        #expect(p.calls.withLock { $0.count } == callsAtReturn)
        #expect(result.finishReason == .cancelled)
        #expect(result.stepsAfterCancel <= 1)
        #expect(callsAtReturn - callsAtCancel <= 1)
        #expect(result.content.count >= 5 && result.content.count < 400)
        #expect(result.content == seen.all.last)
    }

    @Test func cancelledBeforeStartComputesNothing() async throws {
        let p = ScriptedPredictor(script: "abc")
        let runner = p.runner()
        let task = Task {
            try await Task.sleep(for: .milliseconds(20))
            return try await runner.generate(
                GenerationRequest(promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 4, sampling: .greedy))
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
        let runner2 = ScriptedPredictor(script: "abc")
        let task2 = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await runner2.runner().generate(
                GenerationRequest(promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 4, sampling: .greedy))
        }
        let r = try await task2.value
        #expect(r.finishReason == .cancelled && r.content.isEmpty)
        #expect(runner2.calls.withLock { $0.isEmpty })
    }

    @Test func sequenceReuseComputesOnlyTheNewTokens() async throws {
        let p = ScriptedPredictor(script: "ab")
        let runner = p.runner()
        let seq = p.makeSequence(capacity: 100)
        let first = ScriptedPredictor.prompt("hello")
        let r1 = try await runner.generate(
            GenerationRequest(promptTokens: first, maxTokens: 10, sampling: .greedy, sequence: seq))
        #expect(r1.usage.cachedTokens == 0)
        let second = first + r1.tokens + Array("more".utf8).map { Int32($0) } + [255]
        p.calls.withLock { $0.removeAll() }
        let r2 = try await runner.generate(
            GenerationRequest(promptTokens: second, maxTokens: 10, sampling: .greedy, sequence: seq))
        // The cache held the first prompt and all but the last generated token.
        #expect(r2.usage.cachedTokens == first.count + r1.tokens.count - 1)
        #expect(p.calls.withLock { $0.first } == second.count - r2.usage.cachedTokens)
        #expect(r2.content == "ab")
    }

    @Test func twoGenerationsRunTogether() async throws {
        let p = ScriptedPredictor(script: String(repeating: "y", count: 30), stepDelay: .milliseconds(2))
        let runner = p.runner()
        async let a = runner.generate(
            GenerationRequest(promptTokens: ScriptedPredictor.prompt("a"), maxTokens: 30, sampling: .greedy))
        async let b = runner.generate(
            GenerationRequest(promptTokens: ScriptedPredictor.prompt("b"), maxTokens: 30, sampling: .greedy))
        let (ra, rb) = try await (a, b)
        #expect(ra.content.count == 30 && rb.content.count == 30)
        // Their decode steps shared batched predictions.
        #expect(p.batches.withLock { $0 }.contains(2))
    }

    @Test func aNewPromptJoinsTheRunningStreamsBatch() async throws {
        // a decodes for minutes unless cancelled, so b surely arrives while it runs.
        let p = ScriptedPredictor(
            script: String(repeating: "z", count: 30000), contextLength: 40000, stepDelay: .milliseconds(1))
        let runner = p.runner()
        let started = AsyncStream<Void>.makeStream()
        let a = Task {
            try await runner.generate(
                GenerationRequest(promptTokens: ScriptedPredictor.prompt("a"), maxTokens: 30000, sampling: .greedy)
            ) { event in
                if case .snapshot = event { started.continuation.yield() }
            }
        }
        var waiter = started.stream.makeAsyncIterator()
        _ = await waiter.next()
        // 150 prompt tokens: chunks of 64, 64 and 22 (the split a lone prompt gets), each sharing
        // a pass with a's decode token.
        let long = Array(repeating: Int32(120), count: 149) + [255]
        let b = try await runner.generate(GenerationRequest(promptTokens: long, maxTokens: 5, sampling: .greedy))
        a.cancel()
        let ra = try await a.value
        #expect(ra.finishReason == .cancelled && ra.content.allSatisfy { $0 == "z" })
        #expect(b.content == "zzzzz")
        let shapes = p.batchShapes.withLock { $0 }
        #expect(shapes.contains([1, 64]) && shapes.contains([1, 22]), "chunks shared a's passes")
        #expect(shapes.filter { $0.contains(64) }.count == 2, "no prompt chunk ran alone while a was decoding")
        #expect(shapes.allSatisfy { $0.reduce(0, +) <= p.maxTokensPerPass })
    }

    @Test func eventSequenceEndsWithFinishedAndCancelsWhenAbandoned() async throws {
        // A minute of work at 2 ms a token, so a test Task kept waiting by a busy machine still
        // leaves the loop long before the end.
        let p = ScriptedPredictor(
            script: String(repeating: "q", count: 30000), contextLength: 40000, stepDelay: .milliseconds(2))
        let runner = p.runner()
        var count = 0
        for try await element in runner.events(
            GenerationRequest(promptTokens: ScriptedPredictor.prompt("a"), maxTokens: 30000, sampling: .greedy))
        {
            if case .event(.snapshot) = element { count += 1 }
            if count == 5 { break }
        }
        try await Task.sleep(for: .milliseconds(60))
        let calls = p.calls.withLock { $0.count }
        try await Task.sleep(for: .milliseconds(60))
        #expect(p.calls.withLock { $0.count } == calls, "generation kept running after the consumer left")
        #expect(calls < 30000, "generation ran to the end although the consumer left")
    }
}

@Suite struct IgnoreEndOfGenerationTests {
    @Test func ignoringTheEndTokenRunsToMaxTokens() async throws {
        let p = ScriptedPredictor(script: "ab")
        var request = GenerationRequest(promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 6, sampling: .greedy)
        request.ignoreEndOfGeneration = true
        let result = try await p.runner().generate(request)
        #expect(result.finishReason == .length)
        #expect(result.usage.completionTokens == 6)
        #expect(!result.tokens.contains(ScriptedPredictor.endToken))
    }
}
