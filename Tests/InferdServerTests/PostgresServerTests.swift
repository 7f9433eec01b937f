import Foundation
import Glibc
import Telemetry
import TestSupport
import Testing

/// Release binaries over one PostgreSQL database (`--store-url`), as replicas behind a proxy.
@Suite(.serialized, .enabled(if: TestPostgres.enabled, "needs PostgreSQL: make postgres-test"))
final class PostgresServerTests {
    typealias Server = SessionsRestartTests.ServerProcess

    /// The servers' data_dir folders (stored responses live there) go when each test ends (the
    /// suite is serialized, so no other test is using them).
    static let parent = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-pg-\(getpid())")

    deinit { try? FileManager.default.removeItem(at: Self.parent) }

    static func tempDir() -> String {
        parent.appendingPathComponent(UUID().uuidString).path
    }

    static func server(_ url: String, _ extra: [String] = []) throws -> Server {
        try Server(dataDir: tempDir(), extra: ["--store-url", url] + extra)
    }

    static func auth(_ key: String) -> [(String, String)] { [("Authorization", "Bearer \(key)")] }

    @Test func aSessionCreatedOnOneServerIsVisibleOwnedAndUsableOnTheOther() async throws {
        let url = try TestPostgres.freshDatabase()
        try await offPool {
            let a = try Self.server(url, ["--api-keys", "k1-0123456789abcdef,k2-0123456789abcdef"])
            defer { a.stop() }
            let b = try Self.server(url, ["--api-keys", "k1-0123456789abcdef,k2-0123456789abcdef"])
            defer { b.stop() }
            let created = try a.client().postJSON(
                "/v1/sessions", jsonString(["instructions": "You are terse.", "options": ["temperature": 0]]),
                headers: Self.auth("k1-0123456789abcdef"))
            let id = try #require(created.json?["id"] as? String, "\(created.text)")
            #expect(
                try b.client().request("GET", "/v1/sessions/\(id)", headers: Self.auth("k2-0123456789abcdef")).status
                    == 404)
            let listed = try b.client().request("GET", "/v1/sessions", headers: Self.auth("k1-0123456789abcdef"))
            #expect((listed.json?["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])
            let otherKey = try b.client().request("GET", "/v1/sessions", headers: Self.auth("k2-0123456789abcdef"))
            #expect((otherKey.json?["data"] as? [[String: Any]])?.isEmpty == true)
            let seen = try b.client().request("GET", "/v1/sessions/\(id)", headers: Self.auth("k1-0123456789abcdef"))
            #expect(seen.status == 200)
            #expect((seen.json?["transcript"] as? [[String: Any]])?.first?["content"] as? String == "You are terse.")
            let turn = try b.client().postJSON(
                "/v1/sessions/\(id)/responses", jsonString(["prompt": "Say hi.", "options": ["max_tokens": 4]]),
                headers: Self.auth("k1-0123456789abcdef"))
            #expect(turn.status == 200 && turn.json?["status"] as? String == "completed", "\(turn.text)")
            let onA = try a.client().request("GET", "/v1/sessions/\(id)", headers: Self.auth("k1-0123456789abcdef"))
            let transcript = onA.json?["transcript"] as? [[String: Any]] ?? []
            #expect(transcript.map { $0["type"] as? String ?? "" } == ["instructions", "prompt", "response"])
            #expect(transcript.last?["content"] as? String == turn.json?["content"] as? String)

            // A turn running on a: a cancel sent to b is refused, naming where to send it.
            let c = try a.client()
            let head = try c.startStream(
                "/v1/sessions/\(id)/responses",
                jsonString([
                    "prompt": "Write a long poem.", "stream": true,
                    "options": ["max_tokens": 2000, "ignore_eos": true],
                ]), headers: Self.auth("k1-0123456789abcdef"))
            #expect(head.status == 200)
            var reader = SSEReader()
            try c.readEvents(into: &reader) { $0.events.contains { $0.name == "snapshot" } }
            let rid = try #require(
                reader.events.first { $0.name == "snapshot" }.flatMap { jsonObject($0.data)["request_id"] as? String })
            let viaB = try b.client().postJSON(
                "/v1/requests/\(rid)/cancel", "{}", headers: Self.auth("k1-0123456789abcdef"))
            #expect(viaB.status == 409 && viaB.errorCode == "running_on_another_server", "\(viaB.text)")
            let sessionCancelViaB = try b.client().postJSON(
                "/v1/sessions/\(id)/cancel", "{}", headers: Self.auth("k1-0123456789abcdef"))
            #expect(sessionCancelViaB.status == 409 && sessionCancelViaB.errorCode == "running_on_another_server")
            #expect(
                try b.client().postJSON("/v1/requests/\(rid)/cancel", "{}", headers: Self.auth("k2-0123456789abcdef"))
                    .status == 404,
                "another key's request stays hidden")
            let viaA = try a.client().postJSON(
                "/v1/requests/\(rid)/cancel", "{}", headers: Self.auth("k1-0123456789abcdef"))
            #expect(viaA.status == 200 && viaA.json?["cancelled"] as? Bool == true, "\(viaA.text)")
            // Ended: b now answers from the stored transcript.
            let late = try b.client().postJSON(
                "/v1/requests/\(rid)/cancel", "{}", headers: Self.auth("k1-0123456789abcdef"))
            #expect(late.status == 200 && late.json?["was"] as? String == "finished", "\(late.text)")
        }
    }

    @Test func aConversationCreatedOnOneServerIsFoundAndContinuedOnTheOther() async throws {
        let url = try TestPostgres.freshDatabase()
        try await offPool {
            let a = try Self.server(url)
            defer { a.stop() }
            let b = try Self.server(url)
            defer { b.stop() }
            let created = try a.client().postJSON("/v1/conversations", jsonString(["metadata": ["topic": "t"]]))
            let id = try #require(created.json?["id"] as? String, "\(created.text)")
            #expect(try b.client().request("GET", "/v1/conversations/\(id)").status == 200)
            let model = try #require(
                (try b.client().request("GET", "/v1/models").json?["data"] as? [[String: Any]])?.first?["id"] as? String
            )
            let answered = try b.client().postJSON(
                "/v1/responses",
                jsonString(["model": model, "input": "Say hi.", "conversation": id, "max_output_tokens": 4]))
            #expect(answered.status == 200, "\(answered.text)")
            let items = try a.client().request("GET", "/v1/conversations/\(id)/items?order=asc")
            let roles = (items.json?["data"] as? [[String: Any]])?.compactMap { $0["role"] as? String }
            #expect(roles == ["user", "assistant"], "\(items.text)")
        }
    }

    @Test func concurrentTurnsOfOneSessionThroughTwoServersNeverOverlap() async throws {
        let url = try TestPostgres.freshDatabase()
        try await offPool {
            let a = try Self.server(url)
            defer { a.stop() }
            let b = try Self.server(url)
            defer { b.stop() }
            let created = try a.client().postJSON("/v1/sessions", jsonString(["options": ["temperature": 0]]))
            let id = try #require(created.json?["id"] as? String)
            // A long turn runs on a; turns sent meanwhile to b (and more to a) must wait for it.
            let c = try a.client()
            _ = try c.startStream(
                "/v1/sessions/\(id)/responses",
                jsonString([
                    "prompt": "Write a poem.", "stream": true, "options": ["max_tokens": 48, "ignore_eos": true],
                ]))
            var reader = SSEReader()
            try c.readEvents(into: &reader) { $0.events.contains { $0.name == "snapshot" } }
            let results = Locked<[[String: Any]]>([])
            let failures = Locked<[String]>([])
            for i in 0..<4 {
                let server = i % 2 == 0 ? b : a
                Thread {
                    do {
                        let r = try server.client().postJSON(
                            "/v1/sessions/\(id)/responses",
                            jsonString([
                                "prompt": "Count to \(i + 3).", "options": ["max_tokens": 8, "ignore_eos": true],
                            ]))
                        if r.status == 200, let json = r.json {
                            results.withLock { $0.append(json) }
                        } else {
                            failures.withLock { $0.append(r.text) }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }.start()
            }
            try c.readEvents(into: &reader) {
                $0.events.contains { ["completed", "cancelled", "error"].contains($0.name) }
            }
            let long = try #require(reader.events.last)
            #expect(long.name == "completed", "\(long.data)")
            results.withLock { $0.append(jsonObject(long.data)) }
            while results.withLock({ $0.count }) + failures.withLock({ $0.count }) < 5 { usleep(10_000) }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
            // Each turn's prompt holds every turn before it: had two run at once, both would have
            // been built on the same transcript, and the later one's prompt would not hold the other.
            let usages = results.withLock { $0 }.compactMap { $0["usage"] as? [String: Any] }
                .map { ($0["prompt_tokens"] as? Int ?? 0, $0["completion_tokens"] as? Int ?? 0) }.sorted { $0.0 < $1.0 }
            #expect(usages.count == 5)
            for (earlier, later) in zip(usages, usages.dropFirst()) {
                #expect(later.0 > earlier.0 + earlier.1, "\(usages)")
            }
            let transcript =
                try a.client().request("GET", "/v1/sessions/\(id)").json?["transcript"] as? [[String: Any]] ?? []
            #expect(transcript.count == 10)
            #expect(
                transcript.allSatisfy { $0["type"] as? String != "response" || $0["status"] as? String == "completed" })
        }
    }

    @Test func aKilledServersTurnIsInterruptedAndTheOtherServerGoesOn() async throws {
        let url = try TestPostgres.freshDatabase()
        try await offPool {
            let b = try Self.server(url)
            defer { b.stop() }
            let a = try Self.server(url)
            defer { a.stop() }
            let id = try #require(try a.client().postJSON("/v1/sessions", "{}").json?["id"] as? String)
            let c = try a.client()
            _ = try c.startStream(
                "/v1/sessions/\(id)/responses",
                jsonString([
                    "prompt": "Write a long poem.", "stream": true,
                    "options": ["max_tokens": 2000, "ignore_eos": true],
                ]))
            var reader = SSEReader()
            try c.readEvents(into: &reader) { $0.events.filter { $0.name == "snapshot" }.count >= 2 }
            a.kill9()
            let next = try b.client().postJSON(
                "/v1/sessions/\(id)/responses",
                jsonString(["prompt": "Say hi.", "options": ["max_tokens": 4], "timeout_seconds": 20]))
            #expect(next.status == 200 && next.json?["status"] as? String == "completed", "\(next.text)")
            let transcript =
                try b.client().request("GET", "/v1/sessions/\(id)").json?["transcript"] as? [[String: Any]] ?? []
            #expect(transcript.compactMap { $0["status"] as? String } == ["interrupted", "completed"])
        }
    }

    @Test func anUnreachableStoreStopsStartUpWithAClearErrorAndNoPassword() async throws {
        let binary = TestPaths.packageRoot.appendingPathComponent(".build/release/inferd").path
        let (status, stderr) = try await offPool { () -> (Int32, String) in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = [
                "serve", "--port", "0", "--data-dir", Self.tempDir(), "--model", SharedModel.path, "--store-url",
                "postgresql://inferd:hunter2secret@/postgres?host=/nonexistent-inferd-dir",
            ]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            let data = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        #expect(status == 1)
        #expect(stderr.contains("session store unusable") && stderr.contains("cannot connect"), "\(stderr)")
        #expect(stderr.contains("inferd:***@"), "the store is named, redacted: \(stderr)")
        #expect(!stderr.contains("hunter2secret"))
    }

    @Test func aStoreThatGoesAwayMakesRequests503AndComesBack() async throws {
        let cluster = try TestPostgres.startCluster()
        defer { TestPostgres.stopCluster(cluster.dir) }
        try await offPool {
            let server = try Self.server(cluster.url)
            defer { server.stop() }
            let id = try #require(try server.client().postJSON("/v1/sessions", "{}").json?["id"] as? String)
            let first = try server.client().postJSON(
                "/v1/sessions/\(id)/responses", jsonString(["prompt": "Say hi.", "options": ["max_tokens": 4]]))
            #expect(first.status == 200)
            // The database stops (immediate mode: connections are cut).
            try TestPostgres.pauseCluster(cluster.dir)
            let turn = try server.client().postJSON(
                "/v1/sessions/\(id)/responses", jsonString(["prompt": "Again.", "options": ["max_tokens": 4]]))
            #expect(turn.status == 503 && turn.errorCode == "store_unavailable", "\(turn.text)")
            let got = try server.client().request("GET", "/v1/sessions/\(id)")
            #expect(got.status == 503 && got.errorCode == "store_unavailable", "\(got.text)")
            let create = try server.client().postJSON("/v1/sessions", "{}")
            #expect(create.status == 503 && create.errorCode == "store_unavailable", "\(create.text)")
            // /health says so, and stays 200: the model still serves stateless requests.
            let down = try server.client().request("GET", "/health")
            let downStore = down.json?["store"] as? [String: Any]
            #expect(down.status == 200 && downStore?["kind"] as? String == "postgresql", "\(down.text)")
            #expect(downStore?["status"] as? String == "unavailable", "\(down.text)")
            // Back up: the server reconnects by itself and nothing was half-written.
            try TestPostgres.resumeCluster(cluster.dir)
            let after = try server.client().request("GET", "/v1/sessions/\(id)")
            #expect(after.status == 200)
            let up = try server.client().request("GET", "/health").json?["store"] as? [String: Any]
            #expect(up?["status"] as? String == "ok")
            let transcript = after.json?["transcript"] as? [[String: Any]] ?? []
            #expect(transcript.compactMap { $0["status"] as? String } == ["completed"], "\(transcript)")
            let again = try server.client().postJSON(
                "/v1/sessions/\(id)/responses", jsonString(["prompt": "Again.", "options": ["max_tokens": 4]]))
            #expect(again.status == 200, "\(again.text)")
        }
    }

    @Test func thePasswordComesFromStorePasswordFileAndIsNeverLogged() async throws {
        let secret = "pw-\(UUID().uuidString.prefix(8))"
        let cluster = try TestPostgres.startCluster(password: secret)
        defer { TestPostgres.stopCluster(cluster.dir) }
        let dir = Self.tempDir()
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let wrong = dir + "/wrong"
        let right = dir + "/right"
        try Data("not-\(secret)\n".utf8).write(to: URL(fileURLWithPath: wrong))
        try Data("\(secret)\n".utf8).write(to: URL(fileURLWithPath: right))
        let binary = TestPaths.packageRoot.appendingPathComponent(".build/release/inferd").path
        let refused = try await offPool { () -> (Int32, String) in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = [
                "serve", "--port", "0", "--data-dir", dir, "--model", SharedModel.path, "--store-url", cluster.url,
                "--store-password-file", wrong,
            ]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            let data = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        #expect(refused.0 == 1)
        #expect(refused.1.contains("password authentication failed"), "\(refused.1)")
        #expect(!refused.1.contains(secret))
        try await offPool {
            let server = try Self.server(cluster.url, ["--store-password-file", right])
            defer { server.stop() }
            #expect(try server.client().postJSON("/v1/sessions", "{}").status == 201)
            #expect(server.log.lines.withLock { $0 }.allSatisfy { !$0.contains(secret) })
        }
    }
}
