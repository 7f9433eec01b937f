import Foundation
import Glibc
import TestSupport
import Testing

/// The release binary killed with SIGKILL mid-response and started again over the same data_dir.
@Suite(.serialized) struct SessionsRestartTests {
    /// A running `inferd serve` process and its log.
    final class ServerProcess: @unchecked Sendable {
        let process = Process()
        let log = LogCapture()
        let port: Int

        init(dataDir: String, extra: [String] = []) throws {
            let binary = TestPaths.packageRoot.appendingPathComponent(".build/release/inferd").path
            guard FileManager.default.isExecutableFile(atPath: binary) else {
                throw ClientError(description: "no release binary at \(binary): build with make test")
            }
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["serve", "--port", "0", "--data-dir", dataDir, "--model", SharedModel.path] + extra
            process.currentDirectoryURL = TestPaths.packageRoot
            let err = Pipe()
            process.standardError = err
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // Read log lines on a thread of their own until the pipe closes.
            let handle = err.fileHandleForReading
            let log = self.log
            let reader = Thread {
                var pending = ""
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    pending += String(decoding: data, as: UTF8.self)
                    while let nl = pending.firstIndex(of: "\n") {
                        log.append(String(pending[..<nl]))
                        pending = String(pending[pending.index(after: nl)...])
                    }
                }
            }
            reader.start()
            let deadline = Date().addingTimeInterval(30)
            var found: Int?
            while found == nil && Date() < deadline && process.isRunning {
                found = log.matching("server listening").first.flatMap { line in
                    line.split(separator: " ").first { $0.hasPrefix("port=") }.flatMap { Int($0.dropFirst(5)) }
                }
                if found == nil { Thread.sleep(forTimeInterval: 0.02) }
            }
            guard let found else {
                process.terminate()
                throw ClientError(description: "server did not start: \(log.lines.withLock { $0 })")
            }
            port = found
            // Loading is not what these tests measure: on a loaded machine it can take longer than
            // starting to listen, and a turn sent before it ends is a 503 `model_loading`.
            let loaded = Date().addingTimeInterval(120)
            while log.matching("model loaded").isEmpty && Date() < loaded && process.isRunning {
                Thread.sleep(forTimeInterval: 0.02)
            }
            guard !log.matching("model loaded").isEmpty else {
                process.terminate()
                throw ClientError(description: "model not loaded: \(log.lines.withLock { $0 })")
            }
        }

        func client() throws -> TestClient { try TestClient(port: port, timeout: 30) }

        func kill9() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        func stop() {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }

    @Test func killDashNineMidResponseLeavesTheTranscriptIntact() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-kill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (sessionID, firstAnswer) = try await offPool { () -> (String, String) in
            let server = try ServerProcess(dataDir: dir)
            defer { server.stop() }
            let created = try server.client().postJSON(
                "/v1/sessions", jsonString(["instructions": "You are terse.", "options": ["temperature": 0]]))
            guard let id = created.json?["id"] as? String else { throw ClientError(description: created.text) }
            let first = try server.client().postJSON(
                "/v1/sessions/\(id)/responses",
                jsonString(["prompt": "What is the capital of Italy?", "options": ["max_tokens": 16]]))
            let answer = first.json?["content"] as? String ?? ""
            let c = try server.client()
            _ = try c.startStream(
                "/v1/sessions/\(id)/responses",
                jsonString([
                    "prompt": "Now write a very long poem.", "stream": true,
                    "options": ["max_tokens": 2000, "ignore_eos": true],
                ]))
            var reader = SSEReader()
            try c.readEvents(into: &reader) { $0.events.filter { $0.name == "snapshot" }.count >= 3 }
            server.kill9()
            return (id, answer)
        }
        #expect(!firstAnswer.isEmpty)
        try await offPool {
            let server = try ServerProcess(dataDir: dir)
            defer { server.stop() }
            #expect(!server.log.matching("sessions restored count=1 interrupted=1").isEmpty)
            let got = try server.client().request("GET", "/v1/sessions/\(sessionID)")
            #expect(got.status == 200)
            let transcript = got.json?["transcript"] as? [[String: Any]] ?? []
            #expect(
                transcript.map { $0["type"] as? String ?? "" } == [
                    "instructions", "prompt", "response", "prompt", "response",
                ])
            #expect(transcript[2]["content"] as? String == firstAnswer)
            #expect(transcript[2]["status"] as? String == "completed")
            #expect(transcript[3]["content"] as? String == "Now write a very long poem.")
            #expect(transcript[4]["status"] as? String == "interrupted")
            // The session is usable after the restart.
            let next = try server.client().postJSON(
                "/v1/sessions/\(sessionID)/responses", jsonString(["prompt": "Say hi.", "options": ["max_tokens": 4]]))
            #expect(next.status == 200 && next.json?["status"] as? String == "completed", "\(next.status) \(next.text)")
        }
    }

    @Test func sigtermMidResponseRecordsItCancelledWithReasonShutdown() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-term-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (sessionID, terminal) = try await offPool { () -> (String, SSEReader.Event?) in
            let server = try ServerProcess(dataDir: dir, extra: ["--drain-seconds", "0.2"])
            defer { server.stop() }
            let created = try server.client().postJSON("/v1/sessions", "{}")
            guard let id = created.json?["id"] as? String else { throw ClientError(description: created.text) }
            let c = try server.client()
            _ = try c.startStream(
                "/v1/sessions/\(id)/responses",
                jsonString([
                    "prompt": "Write a long poem.", "stream": true,
                    "options": ["max_tokens": 2000, "ignore_eos": true],
                ]))
            var reader = SSEReader()
            try c.readEvents(into: &reader) { $0.events.filter { $0.name == "snapshot" }.count >= 2 }
            kill(server.process.processIdentifier, SIGTERM)
            try c.readEvents(into: &reader) {
                $0.events.contains { ["completed", "cancelled", "error"].contains($0.name) }
            }
            server.process.waitUntilExit()
            return (id, reader.events.last)
        }
        #expect(terminal?.name == "cancelled")
        #expect(jsonObject(terminal?.data ?? "")["reason"] as? String == "shutdown")
        try await offPool {
            let server = try ServerProcess(dataDir: dir)
            defer { server.stop() }
            let transcript =
                try server.client().request("GET", "/v1/sessions/\(sessionID)").json?["transcript"] as? [[String: Any]]
                ?? []
            #expect(transcript.last?["status"] as? String == "cancelled")
            #expect(transcript.last?["reason"] as? String == "shutdown")
            #expect(transcript.last?["content"] as? String == jsonObject(terminal?.data ?? "")["content"] as? String)
        }
    }

    @Test func aCorruptDatabaseStopsStartUpWithAClearError() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-bad-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 4096).write(to: URL(fileURLWithPath: dir + "/inferd.sqlite"))
        let binary = TestPaths.packageRoot.appendingPathComponent(".build/release/inferd").path
        let (status, stderr) = try await offPool { () -> (Int32, String) in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = ["serve", "--port", "0", "--data-dir", dir, "--model", SharedModel.path]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            let data = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        #expect(status == 1)
        #expect(stderr.contains("session store unusable"), "\(stderr)")
    }
}
