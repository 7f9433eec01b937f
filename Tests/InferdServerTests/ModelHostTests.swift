import Backend
import Engine
import HTTPServer
import TestSupport
import Testing

@testable import InferdServer

/// The host wraps the ready backend once for stateless generations and hands a session's turns
/// the backend itself, so a turn never meets single-flight.
@Suite struct ModelHostTests {
    @Test func statelessGenerationsGetTheSingleFlightWrapperAndSessionsTheBackendItself() throws {
        let backend = ScriptedBackend(reply: "ok")
        let host = ModelHost(singleFlight: true)
        host.finish(.ready(backend))
        let shared = try #require(try host.requireBackend() as? SingleFlightBackend)
        #expect(shared.wrapped as? ScriptedBackend === backend)
        #expect(host.backend as? SingleFlightBackend === shared, "the backend is wrapped once")
        #expect(try host.requireSessionBackend() as? ScriptedBackend === backend)
        guard case .ready(let ready) = host.current else {
            Issue.record("expected a ready state")
            return
        }
        #expect(ready as? ScriptedBackend === backend)
    }

    @Test func withSingleFlightOffNothingIsWrapped() throws {
        let backend = ScriptedBackend(reply: "ok")
        let host = ModelHost(singleFlight: false)
        host.finish(.ready(backend))
        #expect(try host.requireBackend() as? ScriptedBackend === backend)
        #expect(try host.requireSessionBackend() as? ScriptedBackend === backend)
    }

    @Test func aPerKeyLimitCountsStatelessGenerationsAndSessionTurnsTogether() async throws {
        let backend = ScriptedBackend(reply: "ok")
        let host = ModelHost(singleFlight: true, perKeyMaxGenerations: 1)
        host.finish(.ready(backend))
        let shared = try #require(try host.requireBackend() as? SingleFlightBackend)
        let limited = try #require(shared.wrapped as? TenantShareBackend)
        #expect(limited.wrapped as? ScriptedBackend === backend)
        #expect(try host.requireSessionBackend() is TenantShareBackend)
        var request = BackendRequest(prompt: backend.prepare(.text("hi")), maxTokens: 2)
        request.scope = GenerationScope(tenant: "alice")
        let pending = try shared.submit(request) { _ in }
        #expect(throws: GenerationError.self) { try host.checkShare(of: "alice") }
        try host.checkShare(of: "bob")
        #expect(try await pending.result().content == "ok")
        try host.checkShare(of: "alice")
    }

    @Test func neitherIsHandedOutBeforeTheModelIsReady() {
        let host = ModelHost()
        #expect(throws: HTTPError.self) { _ = try host.requireSessionBackend() }
        #expect(throws: HTTPError.self) { _ = try host.requireBackend() }
    }
}
