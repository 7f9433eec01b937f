import Foundation
import TestSupport
import Testing

@testable import InferdServer
@testable import Sessions

/// Sessions belong to the API key that created them: another key gets 404 for every operation
/// on them, exactly as for an id that does not exist. Plus the per-key session and per-session
/// turn limits.
@Suite(.serialized) struct SessionOwnershipTests {
    static let alpha = "alpha-key-0123456789"
    static let beta = "beta-key-0123456789x"
    /// The model is not the subject: a scripted backend answers the turns.
    static let backend = ScriptedBackend(reply: "Hello there.")

    func call(
        _ s: RunningServer, _ method: String, _ path: String, key: String, _ body: [String: Any]? = nil
    ) async throws -> RawResponse {
        let json = body.map { jsonString($0) }
        return try await offPool {
            var headers = [("Authorization", "Bearer \(key)")]
            if json != nil { headers.append(("Content-Type", "application/json")) }
            return try s.client().request(method, path, headers: headers, body: Array((json ?? "").utf8))
        }
    }

    @Test func anotherKeyCannotSeeOrTouchASession() async throws {
        try await RunningServer.with(
            state: .ready(Self.backend), configure: { $0.apiKeys = "\(Self.alpha),\(Self.beta)" }
        ) { s in
            let created = try await call(s, "POST", "/v1/sessions", key: Self.alpha, ["options": ["temperature": 0]])
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.json?["id"] as? String)
            let turn = try await call(
                s, "POST", "/v1/sessions/\(id)/responses", key: Self.alpha,
                ["prompt": "Hi", "options": ["max_tokens": 2]])
            #expect(turn.status == 200, "\(turn.text)")
            let requestID = try #require(turn.header("X-Request-Id"))

            // Every operation by the other key: 404, with the same body as an unknown id.
            let unknown = try await call(s, "GET", "/v1/sessions/sess_000000000000000000000000", key: Self.beta)
            #expect(unknown.status == 404)
            for (method, path, body) in [
                ("GET", "/v1/sessions/\(id)", nil), ("DELETE", "/v1/sessions/\(id)", nil),
                ("POST", "/v1/sessions/\(id)/responses", ["prompt": "Hi"] as [String: Any]?),
                ("POST", "/v1/sessions/\(id)/cancel", nil), ("POST", "/v1/requests/\(requestID)/cancel", nil),
            ] {
                let r = try await call(s, method, path, key: Self.beta, body)
                #expect(r.status == 404, "\(method) \(path): \(r.status) \(r.text)")
                #expect(r.errorCode == "session_not_found" || r.errorCode == "request_not_found", "\(r.text)")
                #expect(!r.text.contains("forbidden"))
            }
            // The OpenAI route's session_id extension is the same lookup.
            let model = Self.backend.modelName
            let chat = try await call(
                s, "POST", "/v1/chat/completions", key: Self.beta,
                ["model": model, "session_id": id, "messages": [["role": "user", "content": "Hi"]], "max_tokens": 1])
            #expect(chat.status == 404 && chat.errorCode == "session_not_found", "\(chat.text)")
            let theirs = try await call(s, "GET", "/v1/sessions", key: Self.beta)
            #expect((theirs.json?["data"] as? [Any])?.count == 0)

            // The owner still has it, untouched.
            let mine = try await call(s, "GET", "/v1/sessions", key: Self.alpha)
            #expect((mine.json?["data"] as? [[String: Any]])?.map { $0["id"] as? String } == [id])
            let still = try await call(s, "GET", "/v1/sessions/\(id)", key: Self.alpha)
            #expect(still.status == 200)
            #expect((still.json?["transcript"] as? [Any])?.count == 2, "the refused calls added nothing")
            #expect(try await call(s, "DELETE", "/v1/sessions/\(id)", key: Self.alpha).status == 204)
        }
    }

    @Test func sessionsPerKeyAndTurnsPerSessionAreCapped() async throws {
        try await RunningServer.with(
            state: .ready(Self.backend),
            configure: {
                $0.apiKeys = "\(Self.alpha),\(Self.beta)"
                $0.maxTokensLimit = 64
                $0.maxSessionsPerKey = 2
                $0.maxSessionTurns = 1
            }
        ) { s in
            var ids: [String] = []
            for _ in 0..<2 {
                let r = try await call(s, "POST", "/v1/sessions", key: Self.alpha, [:])
                #expect(r.status == 201)
                ids.append(r.json?["id"] as? String ?? "")
            }
            let third = try await call(s, "POST", "/v1/sessions", key: Self.alpha, [:])
            #expect(third.status == 429 && third.errorCode == "session_limit", "\(third.text)")
            // Another key has its own allowance.
            #expect(try await call(s, "POST", "/v1/sessions", key: Self.beta, [:]).status == 201)

            let path = "/v1/sessions/\(ids[0])/responses"
            let first = try await call(
                s, "POST", path, key: Self.alpha, ["prompt": "Hi", "options": ["max_tokens": 1]])
            #expect(first.status == 200)
            let second = try await call(
                s, "POST", path, key: Self.alpha, ["prompt": "Hi", "options": ["max_tokens": 1]])
            #expect(second.status == 409 && second.errorCode == "session_full", "\(second.text)")
            let tooMany = try await call(
                s, "POST", "/v1/sessions/\(ids[1])/responses", key: Self.alpha,
                ["prompt": "Hi", "options": ["max_tokens": 65]])
            #expect(tooMany.status == 400 && tooMany.errorCode == "max_tokens_too_large")
            // Deleting one makes room again.
            #expect(try await call(s, "DELETE", "/v1/sessions/\(ids[1])", key: Self.alpha).status == 204)
            #expect(try await call(s, "POST", "/v1/sessions", key: Self.alpha, [:]).status == 201)
        }
    }

    /// Request ids are scoped per key: key A using `X-Request-Id: x` first (still running) does not
    /// squat the id. Key B's cancel of its own `x` stops B's request and leaves A's running, and a
    /// third key's cancel of `x` is the 404 of an unknown id.
    @Test func requestIdsAreScopedPerKey() async throws {
        let gamma = "gamma-key-0123456789"
        // Every turn shows a word, then waits until it is cancelled.
        let backend = ScriptedBackend { _ in [.text("working"), .pause(.seconds(120))] }
        try await RunningServer.with(
            state: .ready(backend), configure: { $0.apiKeys = "\(Self.alpha),\(Self.beta),\(gamma)" }
        ) { s in
            var streams: [String: TestClient] = [:]
            var sessionOf: [String: String] = [:]
            for key in [Self.alpha, Self.beta] {
                let created = try await call(s, "POST", "/v1/sessions", key: key, [:])
                let id = try #require(created.json?["id"] as? String)
                sessionOf[key] = id
                streams[key] = try await offPool {
                    let c = try s.client()
                    let (status, headers) = try c.startStream(
                        "/v1/sessions/\(id)/responses", jsonString(["prompt": "Hi", "stream": true]),
                        headers: [("Authorization", "Bearer \(key)"), ("X-Request-Id", "shared-id")])
                    guard status == 200 else { throw ClientError(description: "status \(status)") }
                    #expect(headers.first { $0.0.lowercased() == "x-request-id" }?.1 == "shared-id")
                    var reader = SSEReader()
                    try c.readEvents(into: &reader) { $0.events.contains { $0.name == "snapshot" } }
                    return c
                }
            }
            let stranger = try await call(s, "POST", "/v1/requests/shared-id/cancel", key: gamma)
            let unknown = try await call(s, "POST", "/v1/requests/never-used/cancel", key: gamma)
            #expect(stranger.status == 404 && stranger.errorCode == "request_not_found", "\(stranger.text)")
            #expect(stranger.text == unknown.text.replacingOccurrences(of: "never-used", with: "shared-id"))

            // B (the second to use the id) cancels its own request.
            let b = try await call(s, "POST", "/v1/requests/shared-id/cancel", key: Self.beta)
            #expect(b.status == 200, "\(b.text)")
            #expect(b.json?["cancelled"] as? Bool == true && b.json?["was"] as? String == "running")
            #expect(
                try await call(s, "GET", "/v1/sessions/\(sessionOf[Self.beta]!)", key: Self.beta).json?["status"]
                    as? String == "idle")
            // A's request with the same id still runs.
            let a = try await call(s, "GET", "/v1/sessions/\(sessionOf[Self.alpha]!)", key: Self.alpha)
            #expect(a.json?["status"] as? String == "responding", "\(a.text)")
            let cancelA = try await call(s, "POST", "/v1/requests/shared-id/cancel", key: Self.alpha)
            #expect(cancelA.status == 200 && cancelA.json?["was"] as? String == "running", "\(cancelA.text)")
            for c in streams.values { c.close() }
        }
    }

    /// The session limit is a quota, with one error type on both surfaces: `insufficient_quota`
    /// on `/v1/conversations` (OpenAI's shape) as on `/v1/sessions`, not `invalid_request_error`.
    @Test func theSessionLimitIsAQuotaErrorOnBothSurfaces() async throws {
        try await RunningServer.with(
            state: .ready(Self.backend),
            configure: {
                $0.apiKeys = Self.alpha
                $0.maxSessionsPerKey = 1
            }
        ) { s in
            #expect(try await call(s, "POST", "/v1/conversations", key: Self.alpha, [:]).status == 200)
            for path in ["/v1/conversations", "/v1/sessions"] {
                let r = try await call(s, "POST", path, key: Self.alpha, [:])
                #expect(r.status == 429 && r.errorCode == "session_limit", "\(path): \(r.text)")
                let error = r.json?["error"] as? [String: Any]
                #expect(error?["type"] as? String == "insufficient_quota", "\(path): \(r.text)")
            }
        }
    }

    @Test func ownersSurviveARestartAndOldDatabasesGainTheColumn() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-own-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("old.sqlite").path
        // A database as the sessions feature first wrote it: no owner column.
        do {
            let db = try SQLiteDatabase(path: path)
            try db.execute(
                """
                CREATE TABLE sessions(id TEXT PRIMARY KEY, created INTEGER NOT NULL, on_busy TEXT NOT NULL, options TEXT);
                INSERT INTO sessions VALUES ('sess_old', 1, 'queue', NULL);
                """)
        }
        let store = try TranscriptStore(path: path)
        try store.createSession(
            StoredSession(id: "sess_new", created: 2, onBusy: .queue, options: nil, entries: [], owner: "abc"))
        let reopened = try TranscriptStore(path: path).loadAll()
        #expect(reopened.map(\.id) == ["sess_old", "sess_new"])
        #expect(reopened.map(\.owner) == [nil, "abc"])
    }
}
