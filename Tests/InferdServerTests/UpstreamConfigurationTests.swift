import Engine
import Foundation
import HTTPServer
import RemoteBackend
import Testing

@testable import InferdServer

/// `backend`, `upstream` and the other remote-backend settings, and how their errors reach clients.
@Suite struct UpstreamConfigurationTests {
    func load(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ServerConfiguration {
        try ServerConfiguration.load(arguments: arguments, environment: environment, defaultFile: "/nonexistent.json")
    }

    @Test func openAIBackendReadsUpstreamsModelTimeoutsAndKeyFile() throws {
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString)").path
        try "sk-upstream-secret\nsecond line\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        let c = try load([
            "--backend", "openai", "--upstream", "http://10.0.0.5:8000/v1, https://gpu.example/v1/",
            "--upstream-model", "llama", "--upstream-api-key-file", keyFile, "--upstream-idle-timeout-seconds", "2.5",
            "--max-active-sequences", "3", "--context-length", "4096",
        ])
        #expect(c.upstream.backend == .openai)
        let s = try c.upstreamSettings()
        #expect(s.baseURLs == ["http://10.0.0.5:8000/v1", "https://gpu.example/v1"])
        #expect(s.model == "llama")
        #expect(s.apiKey == "sk-upstream-secret")
        #expect(s.transfer.idleTimeout == .milliseconds(2500))
        #expect(s.transfer.verifyTLS)
        #expect(s.maxActivePerUpstream == 3)
        #expect(s.contextLength == 4096)
        #expect(!c.summary.map(\.1).joined().contains("sk-upstream-secret"))
    }

    @Test func weightsPlaceLimitsHealthAndQueueSettingsReachTheBackend() throws {
        let c = try load([
            "--backend", "openai", "--upstream", "http://a:8000/v1#weight=3&max_active=16,http://b:8000/v1",
            "--max-active-sequences", "4", "--max-queue", "9", "--upstream-health-interval-seconds", "0.5",
            "--upstream-down-after", "3", "--upstream-up-after", "2", "--upstream-health-timeout-seconds", "0.25",
        ])
        let s = try c.upstreamSettings()
        #expect(s.baseURLs == ["http://a:8000/v1", "http://b:8000/v1"])
        #expect(s.endpoints.map(\.weight) == [3, 1])
        #expect(s.endpoints.map(\.maxActive) == [16, nil])
        #expect(s.maxActivePerUpstream == 4)
        #expect(s.maxQueue == 9)
        #expect(
            s.health
                == HealthCheckPolicy(
                    interval: .milliseconds(500), downAfter: 3, upAfter: 2, timeout: .milliseconds(250)))
        let bad = try load(["--backend", "openai", "--upstream", "http://a/v1#weight=0"])
        #expect(throws: ConfigurationError.self) { try bad.upstreamSettings() }
    }

    @Test func theKeyFromTheEnvironmentIsNeverInTheSummary() throws {
        let c = try load(
            ["--backend", "openai", "--upstream", "http://h/v1"], ["INFERD_UPSTREAM_API_KEY": "sk-from-env"])
        #expect(try c.upstreamSettings().apiKey == "sk-from-env")
        #expect(c.summary.first { $0.0 == "upstream_api_key" }?.1 == "(set)")
    }

    @Test func badUpstreamSettingsAreStartUpErrors() throws {
        #expect(throws: ConfigurationError.self) { try load(["--backend", "openai"]).upstreamSettings() }
        #expect(throws: ConfigurationError.self) {
            try load(["--backend", "openai", "--upstream", "ftp://h/v1"]).upstreamSettings()
        }
        #expect(throws: ConfigurationError.self) { try load(["--backend", "vllm"]) }
        #expect(try load([]).upstream.backend == .local)
    }

    @Test func upstreamErrorsMapToTheirStatuses() {
        let busy = HTTPError(GenerationError.upstreamUnavailable("429", retryAfterSeconds: 7))
        #expect(busy.status == 503 && busy.retryAfterSeconds == 7 && busy.code == .upstreamUnavailable)
        let rejected = HTTPError(GenerationError.upstreamRejected(.unprocessable, message: "bad schema"))
        #expect(
            rejected.status == 422 && rejected.code == .upstreamRejected && rejected.message.contains("bad schema"))
        // Each meaning back to the status a client is told; the server's own credentials are not
        // the client's fault.
        let statuses = UpstreamRejection.allCases.map {
            HTTPError(GenerationError.upstreamRejected($0, message: "m")).status
        }
        #expect(statuses == [400, 422, 404, 413, 502])
        let failed = HTTPError(GenerationError.upstreamFailed("stalled"))
        #expect(failed.status == 502 && failed.code == .upstreamFailed)
    }
}
