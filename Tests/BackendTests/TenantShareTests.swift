import Backend
import Engine
import Telemetry
import TestSupport
import Testing

/// Per-tenant limits: the pure counts (time as durations), then the wrapper over a scripted
/// backend (a generation counts from submit until its result is in, or until it is dropped).
@Suite(.timeLimit(.minutes(2))) struct TenantShareTests {
    typealias S = SingleFlightSupport

    @Test func aTenantAtItsLimitIsRefusedAndTheOthersAreNot() throws {
        var shares = TenantShares(limit: 2)
        try shares.acquire("A")
        try shares.acquire("A")
        #expect(throws: GenerationError.tenantBusy(holding: 2, limit: 2, retryAfterSeconds: 2)) {
            try shares.acquire("A")
        }
        // Refused means not counted.
        #expect(shares.holding("A") == 2)
        try shares.acquire("B")
        #expect(shares.holding("B") == 1)
        shares.release("A", held: .seconds(10))
        try shares.acquire("A")
        #expect(shares.holding("A") == 2)
    }

    @Test func noKeysMeansNoLimitAndZeroTurnsItOff() throws {
        var shares = TenantShares(limit: 1)
        for _ in 0..<10 { try shares.acquire("") }
        #expect(shares.holding("") == 10)
        var off = TenantShares(limit: 0)
        for _ in 0..<10 { try off.acquire("A") }
        #expect(off.holding("A") == 10)
    }

    @Test func retryAfterFollowsTheMeanTimeAGenerationIsHeld() throws {
        var shares = TenantShares(limit: 4)
        // Nothing ended yet: 4 s per generation, one of four ends in about 1 s.
        #expect(shares.retryAfterSeconds == 1)
        try shares.acquire("A")
        shares.release("A", held: .seconds(20))
        #expect(shares.retryAfterSeconds == 5)
        shares.release("A", held: .seconds(20 * 60))
        #expect(shares.retryAfterSeconds == 60)
    }

    /// A backend whose generations are held at `gate` until it opens.
    static func held(_ gate: Gate) -> ScriptedBackend {
        ScriptedBackend { _ in [.text("a"), .hold(gate.wait), .text("ab")] }
    }

    static func request(_ backend: any GenerationBackend, tenant: String, _ label: String) throws -> BackendRequest {
        var r = BackendRequest(prompt: try backend.prepare(.text(label)), maxTokens: 8, label: label)
        r.scope = GenerationScope(tenant: tenant)
        return r
    }

    @Test func theWrapperCountsFromSubmitUntilTheResultAndRefusesBeforeTheBackendSeesIt() async throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = Self.held(gate)
        let clock = ManualTimeSource()
        let limited = TenantShareBackend(wrapping: inner, limit: 2, clock: clock)
        let a1 = try limited.submit(Self.request(inner, tenant: "A", "a1")) { _ in }
        let a2 = try limited.submit(Self.request(inner, tenant: "A", "a2")) { _ in }
        #expect(limited.holding("A") == 2)
        #expect(throws: GenerationError.self) { try limited.checkShare(of: "A") }
        let third = try Self.request(inner, tenant: "A", "a3")
        do throws(GenerationError) {
            _ = try limited.submit(third) { _ in }
            Issue.record("a third generation of A must be refused")
        } catch {
            // Nothing has ended yet: 4 s per generation, a share of 2.
            #expect(error == .tenantBusy(holding: 2, limit: 2, retryAfterSeconds: 2))
        }
        // B still gets in.
        let b = try limited.submit(Self.request(inner, tenant: "B", "b")) { _ in }
        let running = [a1, a2, b].map { pending in Task { try await pending.result() } }
        try await S.until { gate.held == 3 }
        // The refused one never reached the backend.
        #expect(Set(inner.requests.map(\.label)) == ["a1", "a2", "b"])
        #expect(limited.holding("A") == 2)
        clock.advance(by: .seconds(8))
        gate.open()
        for task in running { #expect(try await task.value.content == "ab") }
        #expect(limited.holding("A") == 0 && limited.holding("B") == 0)
        // Held 8 s each, a share of 2: one ends about every 4 s.
        let c1 = try limited.submit(Self.request(inner, tenant: "C", "c1")) { _ in }
        let c2 = try limited.submit(Self.request(inner, tenant: "C", "c2")) { _ in }
        #expect(throws: GenerationError.tenantBusy(holding: 2, limit: 2, retryAfterSeconds: 4)) {
            _ = try limited.submit(Self.request(inner, tenant: "C", "c3")) { _ in }
        }
        _ = (c1, c2)
    }

    @Test func aDroppedGenerationOrABackendRefusalGivesThePlaceBack() async throws {
        let limited = TenantShareBackend(wrapping: ScriptedBackend(reply: "ok"), limit: 3)
        var dropped: PendingGeneration? = try limited.submit(Self.request(limited, tenant: "A", "a1")) { _ in }
        #expect(limited.holding("A") == 1)
        _ = dropped
        dropped = nil
        #expect(limited.holding("A") == 0)
        // The backend itself refuses (it is full): not counted here.
        let full = TenantShareBackend(wrapping: ScriptedBackend(maxActive: 0) { _ in [] }, limit: 3)
        #expect(throws: GenerationError.serverBusy(queueLength: 0, retryAfterSeconds: 1)) {
            _ = try full.submit(Self.request(full, tenant: "A", "a2")) { _ in }
        }
        #expect(full.holding("A") == 0)
    }

    @Test func sharingCountsSessionTurnsAndStatelessGenerationsTogether() throws {
        let gate = Gate()
        defer { gate.open() }
        let inner = Self.held(gate)
        let limited = TenantShareBackend(wrapping: inner, limit: 1)
        let sessions = limited.sharing(inner)
        let first = try limited.submit(Self.request(inner, tenant: "A", "a1")) { _ in }
        #expect(throws: GenerationError.self) {
            _ = try sessions.submit(Self.request(inner, tenant: "A", "turn")) { _ in }
        }
        #expect(sessions.holding("A") == 1)
        _ = first
    }
}
