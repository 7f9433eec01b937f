import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import InferdServer

/// HTTPS with a self-signed certificate made here by `openssl`, checked with `curl --cacert`
/// (both installed by scripts/install-deps.sh).
@Suite struct TLSTests {
    struct Tool: Sendable {
        var status: Int32
        var output: String
    }

    static func run(_ tool: String, _ arguments: [String]) async throws -> Tool {
        try await offPool {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = [tool] + arguments
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return Tool(status: p.terminationStatus, output: String(decoding: data, as: UTF8.self))
        }
    }

    /// A fresh directory holding cert.pem and key.pem for 127.0.0.1.
    static func makeCertificate() async throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let r = try await run(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", dir.appendingPathComponent("key.pem").path,
                "-out", dir.appendingPathComponent("cert.pem").path,
            ])
        guard r.status == 0 else { throw ClientError(description: "openssl failed: \(r.output)") }
        return dir
    }

    @Test func servesHTTPSWithTheConfiguredCertificate() async throws {
        let dir = try await Self.makeCertificate()
        try await RunningServer.with(configure: {
            $0.tlsCert = dir.appendingPathComponent("cert.pem").path
            $0.tlsKey = dir.appendingPathComponent("key.pem").path
        }) { s in
            let url = "https://127.0.0.1:\(s.port)"
            let cacert = dir.appendingPathComponent("cert.pem").path
            let health = try await Self.run("curl", ["-sS", "--max-time", "10", "--cacert", cacert, url + "/health"])
            #expect(health.status == 0, "\(health.output)")
            #expect(health.output.contains("\"status\":\"ok\""))
            let answer = try await Self.run(
                "curl",
                [
                    "-sS", "--max-time", "60", "--cacert", cacert, "-H", "Content-Type: application/json", "-d",
                    #"{"prompt":"Hi","stream":true,"options":{"temperature":0,"max_tokens":4}}"#,
                    url + "/v1/generations",
                ])
            #expect(answer.status == 0 && answer.output.contains("event: completed"), "\(answer.output)")
            // An unverified client is refused by curl itself; plain HTTP gets no HTTP answer.
            let untrusted = try await Self.run("curl", ["-sS", "--max-time", "10", url + "/health"])
            #expect(untrusted.status != 0)
            // `inferd healthcheck` speaks HTTPS when tls_cert is set.
            let tlsArgs = [
                "--port", "\(s.port)", "--tls-cert", cacert, "--tls-key", dir.appendingPathComponent("key.pem").path,
            ]
            #expect(HealthcheckCommand.run(arguments: tlsArgs) == 0)
            #expect(HealthcheckCommand.run(arguments: ["--port", "\(s.port)"]) == 1)
            let plain = try await Self.run(
                "curl",
                [
                    "-sS", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}",
                    "http://127.0.0.1:\(s.port)/health",
                ])
            #expect(!plain.output.hasPrefix("200"))
        }
    }

    @Test func missingOrBadFilesAreClearStartUpErrors() async throws {
        let dir = try await Self.makeCertificate()
        let cert = dir.appendingPathComponent("cert.pem").path
        let key = dir.appendingPathComponent("key.pem").path
        func error(_ configure: (inout ServerConfiguration) -> Void) -> String {
            var c = ServerConfiguration()
            c.port = 0
            configure(&c)
            do {
                let server = HTTPServer(
                    configuration: try HTTPServer.Configuration(c), router: Router(), logger: LogCapture().logger,
                    metrics: .init())
                try server.start()
                Task { await server.shutdown() }
                return "started"
            } catch {
                return "\(error)"
            }
        }
        #expect(error { $0.tlsCert = cert }.contains("tls_key is not"))
        #expect(
            error {
                $0.tlsCert = cert; $0.tlsKey = dir.appendingPathComponent("nope.pem").path
            }
            .contains("tls_key: cannot read"))
        #expect(
            error {
                $0.tlsCert = key; $0.tlsKey = key
            }.contains("tls_cert"))
        // PEM-looking but broken: GnuTLS refuses it, and the error says so.
        let broken = dir.appendingPathComponent("broken.pem").path
        try "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".write(
            toFile: broken, atomically: false, encoding: .utf8)
        #expect(
            error {
                $0.tlsCert = broken; $0.tlsKey = key
            }.contains("GnuTLS refused"))
        // A key that does not match the certificate.
        let other = try await Self.makeCertificate()
        #expect(
            error {
                $0.tlsCert = cert; $0.tlsKey = other.appendingPathComponent("key.pem").path
            }
            .contains("GnuTLS refused"))
        #expect(
            error {
                $0.tlsCert = cert; $0.tlsKey = key
            } == "started")
    }
}
