import Backend
import Foundation
import Sessions
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// Per-key quotas over real sockets (issue #39), with several API keys: one key filling its
/// quotas is refused with 429 and never evicts or blocks another key's responses, sessions or
/// items; messages and transcripts are bounded; a session's defaults are checked when it is made.
@Suite(.serialized) struct TenantQuotaEndToEndTests {
    static let a = "alpha-key-0123456789"
    static let b = "bravo-key-0123456789"
    static let c = "charlie-key-012345678"
    static let keys = [a, b, c].joined(separator: ",")

    /// Generations whose prompt says "hold" wait at this gate until the test opens it; the others
    /// answer "ok" at once.
    final class Gate: Sendable {
        private let state = Locked((open: false, waiters: [CheckedContinuation<Void, Never>]()))

        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { s in
                    if !s.open { s.waiters.append(continuation) }
                    return s.open
                }
                if open { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { s in
                s.open = true
                defer { s.waiters.removeAll() }
                return s.waiters
            }
            for w in waiters { w.resume() }
        }
    }

    static func backend(_ gate: Gate, contextLength: Int = 8192) -> ScriptedBackend {
        ScriptedBackend(contextLength: contextLength) { request in
            let held = (request.prompt.tokens ?? []).map { UInt8(truncatingIfNeeded: $0) }
            if String(decoding: held, as: UTF8.self).contains("hold") {
                return [.text("o"), .hold({ await gate.wait() }), .text("ok")]
            }
            return [.text("o"), .text("ok")]
        }
    }

    func call(_ s: RunningServer, _ method: String, _ path: String, key: String, _ body: [String: Any]? = nil)
        async throws -> RawResponse
    {
        let json = body.map { jsonString($0) }
        return try await offPool {
            var headers = [("Authorization", "Bearer \(key)")]
            if json != nil { headers.append(("Content-Type", "application/json")) }
            return try s.client().request(method, path, headers: headers, body: Array((json ?? "").utf8))
        }
    }

    func respond(_ s: RunningServer, key: String, _ input: String, _ extra: [String: Any] = [:]) async throws
        -> RawResponse
    {
        var body: [String: Any] = ["model": "scripted", "input": input]
        body.merge(extra) { _, new in new }
        return try await call(s, "POST", "/v1/responses", key: key, body)
    }

    func status(_ s: RunningServer, _ id: String, key: String) async throws -> Int {
        try await call(s, "GET", "/v1/responses/\(id)", key: key).status
    }

    /// Waits until `id` has finished (a background response).
    func finished(_ s: RunningServer, _ id: String, key: String) async throws -> Bool {
        for _ in 0..<500 {
            let r = try await call(s, "GET", "/v1/responses/\(id)", key: key)
            if let st = r.json?["status"] as? String, !["queued", "in_progress"].contains(st) { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// The probe of the issue: 45 tiny stored responses of key C evicted key A's stored and
    /// background responses. Now C gives up only its own oldest, and at the server's total a key
    /// with nothing of its own to give up is refused (429) instead of evicting anyone.
    @Test func oneKeyFillingItsQuotaNeverEvictsAnotherKeysResponses() async throws {
        try await oneKeyFillingItsQuotaNeverEvictsAnotherKeysResponses(store: nil)
    }

    /// With `store`: the stored responses in it (`TenantQuotaPostgresServerTests` passes PostgreSQL).
    func oneKeyFillingItsQuotaNeverEvictsAnotherKeysResponses(store: (any ResponseStoring)?) async throws {
        let gate = Gate()
        try await RunningServer.with(
            state: .ready(Self.backend(gate)), responses: store,
            configure: {
                $0.apiKeys = Self.keys
                $0.maxStoredResponsesPerKey = 3
                $0.maxStoredResponses = 5
                $0.maxBackgroundResponsesPerKey = 3
            }
        ) { s in
            let a1 = try #require(try await respond(s, key: Self.a, "hi").json?["id"] as? String)
            let a2 = try #require(try await respond(s, key: Self.a, "hi", ["background": true]).json?["id"] as? String)
            #expect(try await finished(s, a2, key: Self.a))

            var cs: [String] = []
            for i in 0..<45 {
                let r = try await respond(s, key: Self.c, "tiny \(i)")
                #expect(r.status == 200, "response \(i) of C: \(WireError(r))")
                cs.append(r.json?["id"] as? String ?? "")
            }
            // A's stored and background responses are still there, and C kept its newest 3.
            #expect(try await status(s, a1, key: Self.a) == 200)
            #expect(try await status(s, a2, key: Self.a) == 200)
            #expect(try await status(s, cs[0], key: Self.c) == 404)
            for id in cs.suffix(3) { #expect(try await status(s, id, key: Self.c) == 200) }

            // The server holds its total (A 2 + C 3): B, with nothing of its own to give up, is refused.
            let refusedB = WireError(try await respond(s, key: Self.b, "hi"))
            #expect(refusedB.status == 429 && refusedB.code == "quota_exceeded", "\(refusedB)")
            #expect(refusedB.param == "max_stored_responses" && refusedB.message.contains("is 5"), "\(refusedB)")
            // Unstored responses are not counted.
            #expect(try await respond(s, key: Self.b, "hi", ["store": false]).status == 200)

            // C's three running responses: nothing of its own has finished, so the fourth is refused.
            var held: [String] = []
            for _ in 0..<3 {
                let r = try await respond(s, key: Self.c, "hold", ["background": true])
                #expect(r.status == 200, "\(WireError(r))")
                held.append(r.json?["id"] as? String ?? "")
            }
            let refusedC = WireError(try await respond(s, key: Self.c, "hi"))
            #expect(refusedC.status == 429 && refusedC.code == "quota_exceeded", "\(refusedC)")
            #expect(refusedC.param == "max_stored_responses_per_key" && refusedC.message.contains("is 3"))
            #expect(try await status(s, a1, key: Self.a) == 200)
            #expect(try await status(s, a2, key: Self.a) == 200)
            // A still stores, giving up its own oldest.
            #expect(try await respond(s, key: Self.a, "hi").status == 200)
            #expect(try await status(s, a2, key: Self.a) == 200)

            gate.open()
            for id in held { #expect(try await finished(s, id, key: Self.c)) }
            #expect(await eventually(timeout: .seconds(10)) { s.app.archive.live.count == 0 })
        }
    }

    /// Background responses per key: C at its quota is refused (429 naming it) while A starts
    /// its own; when C's finish, C may start again.
    @Test func backgroundResponsesAreCountedPerKey() async throws {
        let gate = Gate()
        try await RunningServer.with(
            state: .ready(Self.backend(gate)),
            configure: {
                $0.apiKeys = Self.keys
                $0.maxBackgroundResponsesPerKey = 2
            }
        ) { s in
            var held: [String] = []
            for _ in 0..<2 {
                let r = try await respond(s, key: Self.c, "hold", ["background": true])
                #expect(r.status == 200, "\(WireError(r))")
                held.append(r.json?["id"] as? String ?? "")
            }
            let refused = WireError(try await respond(s, key: Self.c, "hold", ["background": true]))
            #expect(refused.status == 429 && refused.code == "quota_exceeded", "\(refused)")
            #expect(refused.param == "max_background_responses_per_key" && refused.message.contains("is 2"))
            // Foreground responses of C, and A's background ones, are not C's background quota.
            #expect(try await respond(s, key: Self.c, "hi").status == 200)
            let a = try await respond(s, key: Self.a, "hold", ["background": true])
            #expect(a.status == 200, "\(WireError(a))")
            held.append(a.json?["id"] as? String ?? "")
            #expect(s.app.archive.live.count == 3)

            gate.open()
            #expect(try await finished(s, held[0], key: Self.c))
            #expect(try await finished(s, held[1], key: Self.c))
            #expect(try await finished(s, held[2], key: Self.a))
            #expect(try await respond(s, key: Self.c, "hi", ["background": true]).status == 200)
        }
    }

    /// Messages over `max_item_bytes` are refused with 413 naming their field wherever they would
    /// be stored; transcripts stop at `max_transcript_bytes` (429) for that session only; sessions
    /// and conversations count together per key.
    @Test func messagesTranscriptsAndSessionsAreBoundedPerKey() async throws {
        let gate = Gate()
        try await RunningServer.with(
            state: .ready(Self.backend(gate)),
            configure: {
                $0.apiKeys = Self.keys
                $0.maxItemBytes = 64
                $0.maxTranscriptBytes = 200
                $0.maxSessionsPerKey = 3
            }
        ) { s in
            let big = String(repeating: "x", count: 65)
            let fits = String(repeating: "y", count: 60)
            func refusal(_ method: String, _ path: String, key: String = Self.a, _ body: [String: Any]) async throws
                -> WireError
            {
                WireError(try await call(s, method, path, key: key, body))
            }
            let tooLarge = [
                try await refusal("POST", "/v1/sessions", ["instructions": big]),
                try await refusal("POST", "/v1/conversations", ["items": [["role": "system", "content": big]]]),
                WireError(try await respond(s, key: Self.a, big)),
                WireError(try await respond(s, key: Self.a, "hi", ["instructions": big])),
            ]
            #expect(tooLarge.map(\.status) == [413, 413, 413, 413], "\(tooLarge)")
            #expect(tooLarge.map(\.code) == Array(repeating: "payload_too_large", count: 4))
            #expect(tooLarge.map(\.param) == ["instructions", "items[0].content", "input", "instructions"])
            // Not stored, not a stored message: the body and prompt limits apply, not this one.
            #expect(try await respond(s, key: Self.a, big, ["store": false]).status == 200)

            let session = try #require(
                try await call(s, "POST", "/v1/sessions", key: Self.a, [:]).json?["id"] as? String)
            let turn = "/v1/sessions/\(session)/responses"
            let bigTurn = try await refusal("POST", turn, ["prompt": big])
            #expect(bigTurn.status == 413 && bigTurn.param == "prompt", "\(bigTurn)")
            // 60 + 2 bytes a turn: three fit (186), the fourth would pass 200.
            for _ in 0..<3 { #expect(try await call(s, "POST", turn, key: Self.a, ["prompt": fits]).status == 200) }
            let full = try await refusal("POST", turn, ["prompt": fits])
            #expect(
                full.status == 429 && full.code == "quota_exceeded" && full.param == "max_transcript_bytes", "\(full)")
            #expect(full.message.contains("is 200") && full.message.contains("186"), "\(full)")
            // The session is still readable and a short turn still fits.
            #expect(try await call(s, "POST", turn, key: Self.a, ["prompt": "hi"]).status == 200)

            // A conversation's items: each within max_item_bytes, together within the transcript.
            let conv = try #require(
                try await call(s, "POST", "/v1/conversations", key: Self.a, [:]).json?["id"] as? String)
            let items = "/v1/conversations/\(conv)/items"
            let bigItem = try await refusal("POST", items, ["items": [["role": "user", "content": big]]])
            #expect(bigItem.status == 413 && bigItem.param == "items[0].content", "\(bigItem)")
            let four = Array(repeating: ["role": "user", "content": fits], count: 4)
            let overfull = try await refusal("POST", items, ["items": four])
            #expect(overfull.status == 429 && overfull.param == "max_transcript_bytes", "\(overfull)")
            #expect(try await call(s, "POST", items, key: Self.a, ["items": Array(four.prefix(3))]).status == 200)
            // 180 bytes held: a response in it adds its 25-byte input as a turn, past 200.
            let input = String(repeating: "z", count: 25)
            let conversationTurn = WireError(try await respond(s, key: Self.a, input, ["conversation": conv]))
            #expect(
                conversationTurn.status == 429 && conversationTurn.param == "max_transcript_bytes",
                "\(conversationTurn)")
            #expect(try await respond(s, key: Self.a, "hi", ["conversation": conv]).status == 200)

            // Sessions and conversations together: A holds 2 (the refused ones made none); one more
            // fits, then 429; B, with its own allowance, is untouched.
            #expect(try await call(s, "POST", "/v1/sessions", key: Self.a, [:]).status == 201)
            let fourth = try await refusal("POST", "/v1/conversations", [:])
            #expect(fourth.status == 429 && fourth.code == "session_limit" && fourth.param == "max_sessions_per_key")
            let fifth = try await refusal("POST", "/v1/sessions", [:])
            #expect(fifth.status == 429 && fifth.code == "session_limit", "\(fifth)")
            #expect(try await call(s, "POST", "/v1/sessions", key: Self.b, [:]).status == 201)
            #expect(try await call(s, "GET", "/v1/sessions/\(session)", key: Self.a).status == 200)
        }
    }

    /// A session's instructions and default options are checked when it is made, naming the field
    /// (the probe: 200,000 tokens of instructions and a default max_tokens of 99,999,999
    /// were accepted, and every turn then failed).
    @Test func sessionDefaultsAreCheckedAtCreation() async throws {
        let gate = Gate()
        try await RunningServer.with(
            state: .ready(Self.backend(gate, contextLength: 128)),
            configure: {
                $0.maxPromptTokens = 100
                $0.maxTokensLimit = 64
            }
        ) { s in
            func create(_ path: String, _ body: [String: Any]) async throws -> WireError {
                let json = jsonString(body)
                return WireError(try await offPool { try s.client().postJSON(path, json) })
            }
            let cases: [(String, [String: Any], String, String)] = [
                (
                    "/v1/sessions", ["instructions": String(repeating: "i", count: 200_000)], "context_length_exceeded",
                    "instructions"
                ),
                (
                    "/v1/sessions", ["instructions": String(repeating: "i", count: 110)], "prompt_too_long",
                    "instructions"
                ),
                ("/v1/sessions", ["options": ["max_tokens": 99_999_999]], "max_tokens_too_large", "options.max_tokens"),
                (
                    "/v1/sessions", ["instructions": String(repeating: "i", count: 90), "options": ["max_tokens": 60]],
                    "context_length_exceeded", "options.max_tokens"
                ),
                (
                    "/v1/conversations",
                    ["items": [["role": "system", "content": String(repeating: "i", count: 200)]]],
                    "context_length_exceeded", "items"
                ),
            ]
            for (path, body, code, param) in cases {
                let e = try await create(path, body)
                #expect(e.status == 400 && e.code == code && e.param == param, "\(path) \(body.keys.sorted()): \(e)")
            }
            #expect(s.app.sessions.count == 0, "nothing refused was created")
            let fine = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions",
                    jsonString(["instructions": String(repeating: "i", count: 60), "options": ["max_tokens": 60]]))
            }
            #expect(fine.status == 201, "\(WireError(fine))")
        }
    }
}
