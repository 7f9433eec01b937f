import Backend
import Engine
import Telemetry
import TestSupport
import Testing

/// A shared generation stops only when its last subscriber leaves; the others keep it going.
@Suite(.timeLimit(.minutes(2))) struct SingleFlightCancellationTests {
    typealias S = SingleFlightSupport
    static let answer = String(repeating: "z", count: 40)

    @Test func anEarlyLeaverEndsAtOnceAndTheOthersGoOn() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 6, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        let (seenA, seenB) = (Seen(), Seen())
        let returned = Locked<GenerationResult?>(nil)
        let a = Task {
            let r = try await flight.generate(S.request(inner, "a"), onEvent: seenA.record)
            returned.withLock { $0 = r }
        }
        try await gate.waitUntilHeld()
        let b = Task { try await flight.generate(S.request(inner, "b"), onEvent: seenB.record) }
        try await S.until { flight.joinedCount == 1 }
        // The generation is still held at the gate, so the leader can only return because
        // leaving does not wait for the shared generation.
        a.cancel()
        try await S.until { returned.withLock { $0 } != nil }
        let ra = try #require(returned.withLock { $0 })
        #expect(ra.finishReason == .cancelled)
        #expect(ra.content == seenA.snapshots.last && !ra.content.isEmpty)
        #expect(ra.sharedFrom == nil && ra.stepsAfterCancel == 0)
        gate.open()
        let rb = try await b.value
        // The wrapped backend went on to the end for the one who stayed.
        #expect(rb.finishReason == .stop && rb.content == Self.answer)
        #expect(rb.sharedFrom == "a")
        #expect(seenA.snapshots.last == ra.content, "the leaver was sent nothing after its result")
        #expect(inner.requests.count == 1)
    }

    @Test func theLastLeaverStopsTheGenerationAndReturnsOnceItStopped() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 6, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        let a = Task { try await flight.generate(S.request(inner, "a")) { _ in } }
        try await gate.waitUntilHeld()
        let b = Task { try await flight.generate(S.request(inner, "b")) { _ in } }
        try await S.until { flight.joinedCount == 1 }
        b.cancel()
        let rb = try await b.value
        #expect(rb.finishReason == .cancelled && rb.sharedFrom == "a")
        #expect(inner.activeGenerations == 1, "the joiner's leaving stopped the shared generation")
        a.cancel()
        // Held at the gate, the generation cannot have stopped yet: the leader must wait for it.
        try await Task.sleep(for: .milliseconds(50))
        #expect(inner.activeGenerations == 1)
        gate.open()
        let ra = try await a.value
        #expect(ra.finishReason == .cancelled)
        #expect(ra.content.count == 6)
        // It returned only once the wrapped backend had stopped.
        #expect(inner.activeGenerations == 0)
        #expect(flight.inFlightCount == 0)
    }

    @Test func aRequestCancelledBeforeItStartsStopsItsGeneration() async throws {
        let inner = ScriptedBackend(reply: Self.answer)
        let flight = SingleFlightBackend(wrapping: inner)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await flight.generate(S.request(inner, "a")) { _ in }
        }
        let r = try await task.value
        #expect(r.finishReason == .cancelled && r.content.count <= 1)
        #expect(flight.inFlightCount == 0)
        #expect(inner.activeGenerations == 0)
    }

    @Test func droppingASharedPendingGenerationUnawaitedLeavesItToTheOthers() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 6, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        let a = Task { try await flight.generate(S.request(inner, "a")) { _ in } }
        try await gate.waitUntilHeld()
        let seen = Seen()
        var pending: PendingGeneration? = try flight.submit(S.request(inner, "b"), onEvent: seen.record)
        // The replay of the leader's progress arrives at once although the generation is held.
        #expect(seen.snapshots.count == 1 && flight.joinedCount == 1)
        #expect(pending != nil)
        pending = nil
        gate.open()
        let ra = try await a.value
        #expect(ra.finishReason == .stop && ra.content == Self.answer)
    }

    @Test func droppingTheLastPendingGenerationStopsTheGeneration() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 2, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        let seen = Seen()
        var pending: PendingGeneration? = try flight.submit(S.request(inner, "a"), onEvent: seen.record)
        try await gate.waitUntilHeld()
        #expect(pending != nil)
        pending = nil
        // Opened only now, so the generation cannot have run to the end before its requester left.
        gate.open()
        try await S.until { flight.inFlightCount == 0 && inner.activeGenerations == 0 }
        #expect(seen.snapshots.count < Self.answer.count, "generation kept running after its only requester left")
    }

    @Test func aPendingGenerationAwaitedLaterSharesLikeGenerate() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend("ok", holdAfter: 1, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        let a = Task { try await flight.generate(S.request(inner, "a")) { _ in } }
        try await gate.waitUntilHeld()
        let pending = try flight.submit(S.request(inner, "b")) { _ in }
        gate.open()
        let (ra, rb) = try await (a.value, pending.result())
        #expect(rb.content == "ok" && ra.content == "ok")
        #expect(rb.sharedFrom == "a")
        #expect(flight.joinedCount == 1 && inner.requests.count == 1)
    }
}
