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
