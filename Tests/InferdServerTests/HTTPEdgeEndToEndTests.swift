import Foundation
import Glibc
import HTTPServer
import TestSupport
import Testing

@testable import InferdServer

/// The app's head gate (AccessControl) at the HTTP edge, over real sockets.
@Suite("HTTP edge: authentication before the body", .serialized)
struct HTTPEdgeEndToEndTests {
    static let key = "edge-test-key-0123456789"

    static func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    /// 200 connections without a key each declare a 1 MiB body and send 64 KiB of it: each is
    /// answered 401 from its head, before its body is read, and the server's memory barely moves
    /// (the middleware alone buffered every body first: 200 x 64 KiB, and answered none of these,
    /// whose bodies never finish).
    @Test(.timeLimit(.minutes(2))) func twoHundredUnfinishedBodiesWithoutAKeyAreRefusedUnbuffered() async throws {
        try await RunningServer.with(
            configure: {
                $0.apiKeys = Self.key
                $0.perIPConnectionLimit = 0
            }
        ) { s in
            let port = s.port
            let (before, after, statuses) = try await offPool { () -> (Int, Int, [Int]) in
                // Warm up the paths once so the first measurement is not their first use.
                let warm = try TestClient(port: port)
                #expect(try warm.request("GET", "/v1/models").status == 401)
                let before = Self.residentKiB()
                let head =
                    "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(1 << 20)\r\n\r\n"
                let part = Array(head.utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 64 << 10)
                var clients: [TestClient] = []
                for _ in 0..<200 {
                    let c = try TestClient(port: port, timeout: 10)
                    c.send(part)
                    clients.append(c)
                }
                var statuses: [Int] = []
                for c in clients {
                    statuses.append((try? c.readResponse().status) ?? -1)
                }
                let after = Self.residentKiB()
                for c in clients { c.close() }
                return (before, after, statuses)
            }
            let growth = after - before
            print(
                "200 unauthenticated 1 MiB uploads (64 KiB sent each): RSS \(before) KiB -> \(after) KiB (+\(growth) KiB)"
            )
            #expect(statuses.filter { $0 == 401 }.count == 200)
            #expect(growth < 4 << 10)
            #expect(s.metrics.value("inferd_auth_refusals_total", labels: ["code": "missing_api_key"]) == 201)
        }
    }

    /// The key is checked on the whole header value: one with a NUL inside is refused (400)
    /// rather than read as the key before the NUL, and two Authorization headers are ambiguous.
    @Test func authorizationValuesAreTakenWholeAndOnce() async throws {
        try await RunningServer.with(configure: { $0.apiKeys = Self.key }) { s in
            let port = s.port
            try await offPool {
                let ok = try TestClient(port: port)
                #expect(
                    try ok.request("GET", "/v1/models", headers: [("Authorization", "Bearer \(Self.key)")]).status
                        == 200)
                for raw in [
                    Array("GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Self.key)".utf8) + [0]
                        + Array("junk\r\n\r\n".utf8),
                    Array(
                        "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nAuthorization: Bearer \(Self.key)\r\n\r\n"
                            .utf8),
                ] {
                    let c = try TestClient(port: port)
                    c.send(raw)
                    let r = try c.readResponse()
                    #expect(r.status == 400)
                    #expect(r.errorCode == "invalid_request")
                    #expect(r.json.flatMap { ($0["error"] as? [String: Any])?["param"] as? String } == "Authorization")
                    #expect(c.waitForClose())
                }
                // /health stays open without a key.
                let health = try TestClient(port: port)
                #expect(try health.request("GET", "/health").status == 200)
            }
        }
    }

    @Test func edgeSettingsHaveTheirDefaultsAndTheReserveIsCheckedAtStartUp() throws {
        let defaults = try ServerConfiguration.load(arguments: [], environment: [:], defaultFile: "/nonexistent")
        #expect(defaults.perIPConnectionLimit == 64 && defaults.connectionReserve == 64)
        #expect(defaults.headerTimeoutSeconds == 10 && defaults.bodyTimeoutSeconds == 30)
        let http = try HTTPServer.Configuration(defaults)
        #expect(http.perIPConnectionLimit == 64 && http.connectionReserve == 64)
        #expect(http.headerTimeoutSeconds == 10 && http.bodyTimeoutSeconds == 30)
        let flags = try ServerConfiguration.load(
            arguments: ["--header-timeout-seconds", "2.5", "--body-timeout-seconds", "7", "--connection-reserve", "3"],
            environment: [:], defaultFile: "/nonexistent")
        #expect(flags.headerTimeoutSeconds == 2.5 && flags.bodyTimeoutSeconds == 7 && flags.connectionReserve == 3)
        #expect(throws: ConfigurationError.self) {
            _ = try ServerConfiguration.load(
                arguments: ["--header-timeout-seconds", "0"], environment: [:], defaultFile: "/nonexistent")
        }
        var tooBig = defaults
        tooBig.connectionReserve = tooBig.connectionLimit
        #expect(throws: ConfigurationError.self) { _ = try HTTPServer.Configuration(tooBig) }
    }
}
