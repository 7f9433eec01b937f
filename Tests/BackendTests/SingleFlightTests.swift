import Engine
import Telemetry
import TestSupport
import Testing

@testable import Backend

/// Identical deterministic requests share one generation of the wrapped backend. Every test holds
/// the first generation at a gate in the script, so "while it is in flight" is a fact, not a race.
@Suite(.timeLimit(.minutes(2))) struct SingleFlightTests {
    typealias S = SingleFlightSupport
    static let answer = "a shared answer"

    @Test func identicalGreedyRequestsShareOneGeneration() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 4, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        let (seenA, seenB) = (Seen(), Seen())
        let a = Task { try await flight.generate(S.request(inner, "a"), onEvent: seenA.record) }
        try await gate.waitUntilHeld()
        let b = Task { try await flight.generate(S.request(inner, "b"), onEvent: seenB.record) }
        try await S.until { flight.joinedCount == 1 }
        gate.open()
        let (ra, rb) = try await (a.value, b.value)
        #expect(ra.content == Self.answer && rb.content == Self.answer)
        #expect(ra.finishReason == .stop && rb.finishReason == .stop)
        #expect(ra.usage == rb.usage)
        #expect(ra.sharedFrom == nil && rb.sharedFrom == "a")
        // One generation of the wrapped backend: what one request alone costs.
        #expect(inner.requests.count == 1)
        #expect(flight.startedCount == 1 && flight.unsharedCount == 0)
        #expect(seenB.snapshots.last == Self.answer)
        #expect(flight.inFlightCount == 0)
    }

    @Test func aLateJoinerStartsFromTheLeadersLatestSnapshot() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 6, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        let (seenA, seenB) = (Seen(), Seen())
        let a = Task { try await flight.generate(S.request(inner, "a"), onEvent: seenA.record) }
        try await gate.waitUntilHeld()
        let latest = try #require(seenA.snapshots.last)
        #expect(latest.count == 6)
        let b = Task { try await flight.generate(S.request(inner, "b"), onEvent: seenB.record) }
        // The replay happens while joining: prompt first, then the leader's latest snapshot.
        try await S.until { seenB.all.count == 2 }
        #expect(seenB.all == ["prompt", latest])
        gate.open()
        _ = try await (a.value, b.value)
        // Then every later snapshot, each extending the one before: nothing lost, nothing repeated.
        let snapshots = seenB.snapshots
        #expect(snapshots.last == Self.answer)
        for (x, y) in zip(snapshots, snapshots.dropFirst()) { #expect(y.hasPrefix(x) && y.count > x.count) }
        #expect(seenB.all.filter { $0 == "prompt" }.count == 1)
        #expect(Array(seenA.snapshots.drop { $0 != latest }) == snapshots)
    }

    @Test func requestsSampledWithTheSameSeedAreShared() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 3, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        var request = S.request(inner, "a")
        request.sampling = SamplingOptions()
        request.sampling.seed = 42
        let a = Task { [request] in try await flight.generate(request) { _ in } }
        try await gate.waitUntilHeld()
        let b = Task { [request] in try await flight.generate(request) { _ in } }
        try await S.until { flight.joinedCount == 1 }
        gate.open()
        let (ra, rb) = try await (a.value, b.value)
        #expect(ra.content == rb.content && rb.sharedFrom == "a")
        #expect(inner.requests.count == 1)
    }

    @Test func randomlySampledRequestsAreNeverShared() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 3, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        var request = S.request(inner, "a")
        request.sampling = SamplingOptions()
        let a = Task { [request] in try await flight.generate(request) { _ in } }
        try await gate.waitUntilHeld()
        let b = Task { [request] in try await flight.generate(request) { _ in } }
        try await S.until { flight.unsharedCount == 2 && gate.held == 2 }
        gate.open()
        let (ra, rb) = try await (a.value, b.value)
        #expect(ra.sharedFrom == nil && rb.sharedFrom == nil)
        #expect(flight.startedCount == 0 && flight.joinedCount == 0)
        #expect(inner.requests.count == 2)
    }

    @Test func requestsThatDifferInAnythingButTheLabelAreNotShared() async throws {
        let variants: [(String, @Sendable (inout BackendRequest, ScriptedBackend) -> Void)] = [
            ("max tokens", { r, _ in r.maxTokens = 99 }),
            ("stop strings", { r, _ in r.stop = ["never"] }),
            ("ignore end of generation", { r, _ in r.ignoreEndOfGeneration = true }),
            ("prompt", { r, b in r.prompt = b.prepare(.text("other")) }),
            ("an option greedy ignores", { r, _ in r.sampling.topK = 7 }),
            ("repeat penalty", { r, _ in r.sampling.repeatPenalty = 1.1 }),
            ("frequency penalty", { r, _ in r.sampling.frequencyPenalty = 0.5 }),
            ("presence penalty", { r, _ in r.sampling.presencePenalty = -0.5 }),
            ("priority", { r, _ in r.priority = .background }),
            ("a deadline", { r, _ in r.deadline = .now + .seconds(60) }),
            ("a session's sequence", { r, _ in r.sequence = StubSequence() }),
        ]
        for (name, change) in variants {
            let gate = Gate()
            defer { gate.open() }
            let inner = S.backend(Self.answer, holdAfter: 3, gate: gate)
            let flight = SingleFlightBackend(wrapping: inner)
            let a = Task { try await flight.generate(S.request(inner, "a")) { _ in } }
            try await gate.waitUntilHeld()
            var other = S.request(inner, "b")
            change(&other, inner)
            let b = Task { [other] in try await flight.generate(other) { _ in } }
            try await S.until { flight.startedCount + flight.unsharedCount == 2 && gate.held == 2 }
            gate.open()
            let (ra, rb) = try await (a.value, b.value)
            #expect(ra.sharedFrom == nil && rb.sharedFrom == nil, "\(name)")
            #expect(flight.joinedCount == 0, "\(name)")
            #expect(inner.requests.count == 2, "\(name)")
        }
    }

    @Test func aRequestAfterTheGenerationEndedRunsAgain() async throws {
        let inner = ScriptedBackend(reply: Self.answer)
        let flight = SingleFlightBackend(wrapping: inner)
        let first = try await flight.generate(S.request(inner, "a")) { _ in }
        let second = try await flight.generate(S.request(inner, "b")) { _ in }
        #expect(first.content == second.content && second.sharedFrom == nil)
        #expect(flight.startedCount == 2 && flight.joinedCount == 0)
        #expect(inner.requests.count == 2)
    }

    @Test func aRefusedLeaderIsRefusedAtSubmit() async throws {
        let inner = ScriptedBackend(maxActive: 0) { _ in [.text("x")] }
        let flight = SingleFlightBackend(wrapping: inner)
        #expect(throws: GenerationError.self) { _ = try flight.submit(S.request(inner, "a")) { _ in } }
        #expect(flight.inFlightCount == 0 && inner.requests.isEmpty)
    }

    /// The local engine keys on the rendered ids, so inputs that render the same share; a backend
    /// that sends the input on keys on the input. The constraint's identity is part of the key.
    @Test func theKeyIsTheRenderedPromptOrTheInputAndTheConstraint() {
        let inner = ScriptedBackend(reply: "")
        var a = BackendRequest(prompt: inner.prepare(.text("ab")), maxTokens: 5, sampling: .greedy, label: "a")
        var b = a
        b.prompt = inner.prepare(.tokens([97, 98]))
        b.label = "b"
        #expect(SingleFlightKey(a) == SingleFlightKey(b))
        a.prompt = PreparedPrompt(input: .text("ab"), tokenCount: 1)
        b.prompt = PreparedPrompt(input: .tokens([97, 98]), tokenCount: 1)
        #expect(SingleFlightKey(a) != SingleFlightKey(b))
        b.prompt = PreparedPrompt(input: .text("ab"), tokenCount: 1)
        #expect(SingleFlightKey(a) == SingleFlightKey(b))
        var c = a
        c.constraint = StubConstraint(identity: "toy-json")
        var d = a
        d.constraint = StubConstraint(identity: "{}")
        #expect(SingleFlightKey(a) != SingleFlightKey(c))
        #expect(SingleFlightKey(c) != SingleFlightKey(d))
        #expect(SingleFlightKey(c) == SingleFlightKey(c))
    }

    /// Identical requests of different tenants, or of one tenant with different cache salts, are
    /// different keys: they never share a generation.
    @Test func theKeyIsScopedToTheTenantAndItsSalt() {
        let inner = ScriptedBackend(reply: "")
        var a = BackendRequest(prompt: inner.prepare(.text("ab")), maxTokens: 5, sampling: .greedy, label: "a")
        a.scope = GenerationScope(tenant: "key-a")
        var b = a
        b.label = "b"
        #expect(SingleFlightKey(a) == SingleFlightKey(b))
        b.scope = GenerationScope(tenant: "key-b")
        #expect(SingleFlightKey(a) != SingleFlightKey(b))
        b.scope = GenerationScope(tenant: "key-a", cacheSalt: "x")
        #expect(SingleFlightKey(a) != SingleFlightKey(b))
    }

    /// Through the wrapper: while one tenant's generation is in flight, the same greedy request
    /// of another tenant starts a generation of its own instead of joining it.
    @Test func twoTenantsIdenticalRequestsRunApart() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = S.backend(Self.answer, holdAfter: 4, gate: gate)
        let flight = SingleFlightBackend(wrapping: inner)
        var first = S.request(inner, "a")
        first.scope = GenerationScope(tenant: "key-a")
        var second = S.request(inner, "b")
        second.scope = GenerationScope(tenant: "key-b")
        let a = Task { [first] in try await flight.generate(first) { _ in } }
        try await gate.waitUntilHeld()
        let b = Task { [second] in try await flight.generate(second) { _ in } }
        try await S.until { inner.requests.count == 2 }
        gate.open()
        let (ra, rb) = try await (a.value, b.value)
        #expect(ra.sharedFrom == nil && rb.sharedFrom == nil)
        #expect(flight.joinedCount == 0)
    }
}

/// A constraint only named, never run.
struct StubConstraint: GenerationConstraint {
    let identity: String
    func makeProcessor() -> any LogitsProcessor { fatalError("a stub constraint is never run") }
}

/// One wrapper per backend instance, as the engine's own single-flight was one per engine: two
/// servers over one backend share its generations in flight.
@Suite struct SingleFlightWrapperIdentityTests {
    @Test func oneBackendHasOneWrapperWhileItLives() {
        let backend = ScriptedBackend(reply: "ok")
        let first = SingleFlightBackend.over(backend)
        #expect(SingleFlightBackend.over(backend) === first)
        #expect(SingleFlightBackend.over(ScriptedBackend(reply: "ok")) !== first)
    }
}
