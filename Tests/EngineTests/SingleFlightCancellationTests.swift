import Foundation
import Synchronization
import Telemetry
import Testing

@testable import Engine

/// A shared generation stops only when its last subscriber leaves; the others keep it going.
@Suite(.timeLimit(.minutes(2))) struct SingleFlightCancellationTests {
    typealias Seen = SingleFlightTests.Seen
    static let script = String(repeating: "z", count: 300)

    static func request(_ label: String) -> GenerationRequest {
        GenerationRequest(
            promptTokens: ScriptedPredictor.prompt("q"), maxTokens: 300, sampling: .greedy, label: label)
    }

    @Test func anEarlyLeaverEndsAtOnceAndTheOthersGoOn() async throws {
        let p = GatedPredictor(script: Self.script, holdAtCall: 6)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        let (seenA, seenB) = (Seen(), Seen())
        let returned = Locked<GenerationResult?>(nil)
        let a = Task {
            let r = try await flight.generate(Self.request("a"), onEvent: seenA.record)
            returned.withLock { $0 = r }
        }
        await p.waitUntilHeld()
        let b = Task { try await flight.generate(Self.request("b"), onEvent: seenB.record) }
        try await SingleFlightTests.until { flight.joinedCount == 1 }
        // The engine is still blocked at the gate, so the leader can only return because leaving
        // does not wait for the shared generation.
        a.cancel()
        try await SingleFlightTests.until { returned.withLock { $0 } != nil }
        let ra = try #require(returned.withLock { $0 })
        #expect(ra.finishReason == .cancelled)
        #expect(ra.content == seenA.snapshots.last && !ra.content.isEmpty)
        #expect(ra.sharedFrom == nil && ra.stepsAfterCancel == 0)
        let callsWhenLeft = p.calls.count
        p.open()
        let rb = try await b.value
        #expect(rb.finishReason == .length && rb.content == Self.script)
        #expect(rb.sharedFrom == "a")
        // The predictor went on to the end for the one who stayed.
        #expect(p.calls.count == Self.script.count)
        #expect(p.calls.count > callsWhenLeft)
        #expect(seenA.snapshots.last == ra.content, "the leaver was sent nothing after its result")
    }

    @Test func theLastLeaverStopsTheGenerationWithinAStep() async throws {
        let p = GatedPredictor(script: Self.script, holdAtCall: 6)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        let a = Task { try await flight.generate(Self.request("a")) }
        await p.waitUntilHeld()
        let b = Task { try await flight.generate(Self.request("b")) }
        try await SingleFlightTests.until { flight.joinedCount == 1 }
        let returned = Locked<GenerationResult?>(nil)
        let waiting = Task {
            let r = try? await b.value
            returned.withLock { $0 = r }
        }
        b.cancel()
        try await SingleFlightTests.until { returned.withLock { $0 } != nil }
        let rb = try #require(returned.withLock { $0 })
        #expect(rb.finishReason == .cancelled && rb.sharedFrom == "a")
        _ = await waiting.value
        a.cancel()
        p.open()
        let ra = try await a.value
        #expect(ra.finishReason == .cancelled)
        #expect(ra.stepsAfterCancel <= 1)
        // It returned only once the engine had stopped: nothing in flight, nothing more runs.
        #expect(p.inner.inFlight.load(ordering: .relaxed) == 0)
        let callsAtReturn = p.calls.count
        #expect(callsAtReturn <= 7)
        try await Task.sleep(for: .milliseconds(50))
        #expect(p.calls.count == callsAtReturn)
        #expect(flight.inFlightCount == 0)
    }

    @Test func aRequestCancelledBeforeItStartsStopsItsGeneration() async throws {
        let p = ScriptedPredictor(script: Self.script)
        let flight = SingleFlight(runner: p.runner())
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await flight.generate(Self.request("a"))
        }
        let r = try await task.value
        #expect(r.finishReason == .cancelled && r.content.count <= 1)
        #expect(p.calls.withLock { $0.count } <= 1)
        #expect(flight.inFlightCount == 0)
    }

    @Test func abandoningASharedEventSequenceLeavesItToTheOthers() async throws {
        let p = GatedPredictor(script: Self.script, holdAtCall: 6)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        let a = Task { try await flight.generate(Self.request("a")) }
        await p.waitUntilHeld()
        var seen: [String] = []
        for try await element in flight.events(Self.request("b")) {
            if case .event(.snapshot(let content, _)) = element { seen.append(content) }
            // The replay of the leader's progress arrives at once although the engine is held.
            if !seen.isEmpty { break }
        }
        #expect(flight.joinedCount == 1)
        p.open()
        let ra = try await a.value
        #expect(ra.finishReason == .length && ra.content == Self.script)
    }

    @Test func abandoningTheLastEventSequenceStopsTheGeneration() async throws {
        let p = GatedPredictor(script: Self.script, holdAtCall: 6)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        var snapshots = 0
        for try await element in flight.events(Self.request("a")) {
            if case .event(.snapshot) = element { snapshots += 1 }
            if snapshots == 2 { break }
        }
        // Opened only now, so the engine cannot have run to the end before the consumer left.
        p.open()
        try await SingleFlightTests.until { flight.inFlightCount == 0 }
        let calls = p.calls.count
        #expect(calls < Self.script.count)
        try await Task.sleep(for: .milliseconds(50))
        #expect(p.calls.count == calls, "generation kept running after its only consumer left")
    }

    @Test func eventSequencesShareLikeGenerate() async throws {
        let p = GatedPredictor(script: "ok", holdAtCall: 2)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        let a = Task { try await flight.generate(Self.request("a")) }
        await p.waitUntilHeld()
        let events = flight.events(Self.request("b"))
        p.open()
        var final: GenerationResult?
        for try await element in events {
            if case .finished(let r) = element { final = r }
        }
        let ra = try await a.value
        #expect(final?.content == "ok" && ra.content == "ok")
        #expect(final?.sharedFrom == "a")
        #expect(flight.joinedCount == 1)
    }
}
