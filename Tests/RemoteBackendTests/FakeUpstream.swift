import Foundation
import Glibc
import TestSupport

/// `scripts/fake-upstream.py` running as a child process: a scripted OpenAI-compatible upstream
/// whose base URL picks its behaviour (`http://127.0.0.1:PORT/<mode>/v1`).
final class FakeUpstream: @unchecked Sendable {
    let process = Process()
    let port: Int

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `port` 0 picks a free one; another serves there again (after `stop`, to come back).
    init(port: Int = 0) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", Self.packageRoot.appendingPathComponent("scripts/fake-upstream.py").path, "\(port)",
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        guard line.hasPrefix("PORT "), let port = Int(line.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            throw ClientError(description: "fake upstream did not start: \(line)")
        }
        self.port = port
    }

    func url(_ mode: String) -> String { "http://127.0.0.1:\(port)/\(mode)/v1" }

    struct Stats: Decodable {
        var open: Int
        var requests: Int
        var closed_at: [Double]
    }

    func stats() throws -> Stats {
        let client = try TestClient(port: port, timeout: 5)
        defer { client.close() }
        let response = try client.request("GET", "/stats")
        return try JSONDecoder().decode(Stats.self, from: Data(response.body))
    }

    /// SIGKILL: the script may inherit a blocked SIGTERM from the test runner.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
