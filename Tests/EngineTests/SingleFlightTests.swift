import Foundation
import Synchronization
import Telemetry
import Testing

@testable import Engine

/// Identical deterministic requests share one generation. Every test holds the first
/// generation at a gate in the predictor, so "while it is in flight" is a fact, not a race.
@Suite(.timeLimit(.minutes(2))) struct SingleFlightTests {
    /// What one request saw, in order: "prompt" for `started`, else the snapshot text.
    final class Seen: Sendable {
        let events = Locked<[String]>([])
        var all: [String] { events.withLock { $0 } }
        var snapshots: [String] { all.filter { $0 != "prompt" } }
        func record(_ event: GenerationEvent) {
            switch event {
            case .started: events.withLock { $0.append("prompt") }
            case .snapshot(let content, _): events.withLock { $0.append(content) }
            case .queued: break
            }
        }
    }

    static let script = "a shared answer"
    static let prompt = ScriptedPredictor.prompt("q")

    static func request(_ label: String, maxTokens: Int = 100) -> GenerationRequest {
        GenerationRequest(promptTokens: prompt, maxTokens: maxTokens, sampling: .greedy, label: label)
    }

    /// Polls a condition the test is waiting for (never a timing assertion: only a bound on waiting).
    static func until(_ condition: () -> Bool) async throws {
        for _ in 0..<4000 where !condition() { try await Task.sleep(for: .milliseconds(5)) }
        try #require(condition())
    }

    /// Predictions that computed the prompt (the scripted prompts are longer than one token).
    static func promptComputations(_ p: GatedPredictor) -> Int { p.calls.filter { $0 == prompt.count }.count }

    @Test func identicalGreedyRequestsShareOneComputation() async throws {
        let p = GatedPredictor(script: Self.script, holdAtCall: 4)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        let (seenA, seenB) = (Seen(), Seen())
        let a = Task { try await flight.generate(Self.request("a"), onEvent: seenA.record) }
        await p.waitUntilHeld()
        let b = Task { try await flight.generate(Self.request("b"), onEvent: seenB.record) }
        try await Self.until { flight.joinedCount == 1 }
        p.open()
        let (ra, rb) = try await (a.value, b.value)
        #expect(ra.content == Self.script && rb.content == Self.script)
        #expect(ra.finishReason == .stop && rb.finishReason == .stop)
        #expect(ra.tokens == rb.tokens && ra.usage == rb.usage)
        #expect(ra.sharedFrom == nil && rb.sharedFrom == "a")
        // One prompt computed, one prediction per token: what one request alone costs.
        #expect(Self.promptComputations(p) == 1)
        #expect(p.calls.count == Self.script.utf8.count + 1)
        #expect(flight.startedCount == 1 && flight.unsharedCount == 0)
        #expect(seenB.snapshots.last == Self.script)
        #expect(flight.inFlightCount == 0)
    }

    @Test func aLateJoinerStartsFromTheLeadersLatestSnapshot() async throws {
        let p = GatedPredictor(script: Self.script, holdAtCall: 6)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        let (seenA, seenB) = (Seen(), Seen())
        let a = Task { try await flight.generate(Self.request("a"), onEvent: seenA.record) }
        await p.waitUntilHeld()
        let latest = try #require(seenA.snapshots.last)
        #expect(latest.count >= 3)
        let b = Task { try await flight.generate(Self.request("b"), onEvent: seenB.record) }
        // The replay happens while joining: prompt first, then the leader's latest snapshot.
        try await Self.until { seenB.all.count == 2 }
        #expect(seenB.all == ["prompt", latest])
        p.open()
        _ = try await (a.value, b.value)
        // Then every later snapshot, each extending the one before: nothing lost, nothing repeated.
        let snapshots = seenB.snapshots
        #expect(snapshots.last == Self.script)
        for (x, y) in zip(snapshots, snapshots.dropFirst()) { #expect(y.hasPrefix(x) && y.count > x.count) }
        #expect(seenB.all.filter { $0 == "prompt" }.count == 1)
        #expect(Array(seenA.snapshots.drop { $0 != latest }) == snapshots)
    }

    @Test func requestsSampledWithTheSameSeedAreShared() async throws {
        let p = GatedPredictor(script: Self.script, holdAtCall: 3)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        var sampling = SamplingOptions()
        sampling.seed = 42
        let request = GenerationRequest(promptTokens: Self.prompt, maxTokens: 100, sampling: sampling, label: "a")
        let a = Task { try await flight.generate(request) }
        await p.waitUntilHeld()
        let b = Task { try await flight.generate(request) }
        try await Self.until { flight.joinedCount == 1 }
        p.open()
        let (ra, rb) = try await (a.value, b.value)
        #expect(ra.content == rb.content && rb.sharedFrom == "a")
        #expect(Self.promptComputations(p) == 1)
    }

    @Test func randomlySampledRequestsAreNeverShared() async throws {
        let p = GatedPredictor(script: Self.script, holdAtCall: 3)
        defer { p.open() }
        let flight = SingleFlight(runner: p.runner())
        let request = GenerationRequest(promptTokens: Self.prompt, maxTokens: 100, sampling: SamplingOptions())
        let a = Task { try await flight.generate(request) }
        await p.waitUntilHeld()
        let b = Task { try await flight.generate(request) }
        try await Self.until { flight.unsharedCount == 2 }
        p.open()
        let (ra, rb) = try await (a.value, b.value)
        #expect(ra.sharedFrom == nil && rb.sharedFrom == nil)
        #expect(flight.startedCount == 0 && flight.joinedCount == 0)
        #expect(Self.promptComputations(p) == 2)
    }

    @Test func requestsThatDifferInAnythingButTheLabelAreNotShared() async throws {
        var variants: [(String, (inout GenerationRequest) -> Void)] = [
            ("max tokens", { $0.maxTokens = 99 }),
            ("stop strings", { $0.stop = ["never"] }),
            ("ignore end of generation", { $0.ignoreEndOfGeneration = true }),
            ("prompt", { $0.promptTokens = ScriptedPredictor.prompt("other") }),
            ("an option greedy ignores", { $0.sampling.topK = 7 }),
            ("repeat penalty", { $0.sampling.repeatPenalty = 1.1 }),
            ("frequency penalty", { $0.sampling.frequencyPenalty = 0.5 }),
            ("presence penalty", { $0.sampling.presencePenalty = -0.5 }),
        ]
        variants.append(
            ("a session's sequence", { $0.sequence = ScriptedPredictor(script: "").makeSequence(capacity: 512) }))
        for (name, change) in variants {
            let p = GatedPredictor(script: Self.script, holdAtCall: 3)
            defer { p.open() }
            let flight = SingleFlight(runner: p.runner())
            let a = Task { try await flight.generate(Self.request("a")) }
            await p.waitUntilHeld()
            var other = Self.request("b")
            change(&other)
            let b = Task { [other] in try await flight.generate(other) }
            try await Self.until { flight.startedCount + flight.unsharedCount == 2 }
            p.open()
            let (ra, rb) = try await (a.value, b.value)
            #expect(ra.sharedFrom == nil && rb.sharedFrom == nil, "\(name)")
            #expect(flight.joinedCount == 0, "\(name)")
        }
    }

    @Test func aRequestAfterTheGenerationEndedComputesAgain() async throws {
        let p = ScriptedPredictor(script: Self.script)
        let flight = SingleFlight(runner: p.runner())
        let first = try await flight.generate(Self.request("a"))
        let second = try await flight.generate(Self.request("b"))
        #expect(first.content == second.content && second.sharedFrom == nil)
        #expect(flight.startedCount == 2 && flight.joinedCount == 0)
    }
}
