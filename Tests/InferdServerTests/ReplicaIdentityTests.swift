import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Every response names the replica that served it, so affinity behind a load balancer can be
/// seen: answers, errors and streams alike.
@Suite struct ReplicaIdentityTests {
    @Test func everyResponseCarriesTheReplicaName() async throws {
        try await RunningServer.with(configure: { $0.replicaId = "replica-a" }) { s in
            let health = try await offPool { try s.client().request("GET", "/health") }
            #expect(health.status == 200 && health.header("X-Inferd-Replica") == "replica-a")
            let missing = try await offPool { try s.client().request("GET", "/v1/no-such-route") }
            #expect(missing.status == 404 && missing.header("X-Inferd-Replica") == "replica-a")
            let refused = try await offPool { try s.client().postJSON("/v1/generations", #"{"prompt": 3}"#) }
            #expect(refused.status == 400 && refused.header("X-Inferd-Replica") == "replica-a")
            let (headers, reader) = try await offPool { () -> ([(String, String)], SSEReader) in
                let c = try s.client()
                let (_, headers) = try c.startStream(
                    "/v1/generations", #"{"prompt": "Hi", "stream": true, "options": {"max_tokens": 2}}"#)
                var reader = SSEReader()
                _ = try c.readEvents(into: &reader) { $0.events.contains { $0.name == "completed" } }
                return (headers, reader)
            }
            #expect(headers.contains { $0.0.lowercased() == "x-inferd-replica" && $0.1 == "replica-a" })
            let started = reader.events.first { $0.name == "started" }.map { jsonObject($0.data) }
            #expect(started?["replica_id"] as? String == "replica-a")
        }
    }

    @Test func withoutASettingTheHostNameIsUsed() async throws {
        try await RunningServer.with { s in
            let health = try await offPool { try s.client().request("GET", "/health") }
            let name = try #require(health.header("X-Inferd-Replica"))
            #expect(!name.isEmpty && name == ProcessInfo.processInfo.hostName)
        }
    }
}
