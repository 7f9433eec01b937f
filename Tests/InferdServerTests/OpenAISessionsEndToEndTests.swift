import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// The `session_id` extension of `/v1/chat/completions` over real sockets with the real model:
/// turns land in the session's transcript, reuse its cache, follow its `on_busy` policy and
/// answer in OpenAI's shape. Serialized like the native session suite.
@Suite(.serialized) struct OpenAISessionsEndToEndTests {
    func createSession(_ s: RunningServer, _ body: [String: Any] = [:]) async throws -> String {
        let json = jsonString(body)
        let r = try await offPool { try s.client().postJSON("/v1/sessions", json) }
        #expect(r.status == 201, "\(r.text)")
        return try #require(r.json?["id"] as? String)
    }

    func chat(_ s: RunningServer, _ body: [String: Any]) async throws -> RawResponse {
        let json = try chatJSON(body)
        return try await offPool { try s.client().postJSON("/v1/chat/completions", json) }
    }

    func chatJSON(_ body: [String: Any]) throws -> String {
        var b = body
        b["model"] = try SharedModel.engine().modelName
        return jsonString(b)
    }

    func user(_ text: String) -> [String: Any] { ["role": "user", "content": text] }

    func transcript(_ s: RunningServer, _ id: String) async throws -> [[String: Any]] {
        let r = try await offPool { try s.client().request("GET", "/v1/sessions/\(id)") }
        return r.json?["transcript"] as? [[String: Any]] ?? []
    }

    /// Streams a chat completion until `until` holds; the client stays open for the caller.
    func stream(
        _ s: RunningServer, _ body: [String: Any],
        until: @escaping @Sendable (SSEReader) -> Bool = {
            $0.events.contains { $0.data == "[DONE]" }
        }
    ) async throws -> (TestClient, Int, SSEReader) {
        var b = body
        b["stream"] = true
        let json = try chatJSON(b)
        return try await offPool {
            let c = try s.client()
            let (status, _) = try c.startStream("/v1/chat/completions", json)
            var reader = SSEReader()
            if status == 200 { try c.readEvents(into: &reader, until: until) }
            return (c, status, reader)
        }
    }

    static func content(_ r: RawResponse) -> String? {
        ((r.json?["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
    }

    static func deltas(_ r: SSEReader) -> [String] {
        r.events.filter { $0.data != "[DONE]" }.compactMap {
            ((jsonObject($0.data)["choices"] as? [[String: Any]])?.first?["delta"] as? [String: Any])?["content"]
                as? String
        }
    }

    @Test func twoTurnsShareTheSessionsHistoryAndCache() async throws {
        try await RunningServer.with { s in
            let id = try await createSession(s, ["instructions": "You are terse.", "options": ["temperature": 0]])
            let first = try await chat(
                s, ["session_id": id, "messages": [user("My name is Ada. Say hello to me.")], "max_tokens": 24])
            #expect(first.status == 200, "\(first.text)")
            #expect(first.json?["object"] as? String == "chat.completion")
            let answer1 = try #require(Self.content(first))
            #expect(!answer1.isEmpty)
            let usage1 = try #require(first.json?["usage"] as? [String: Any])
            let prompt1 = try #require(usage1["prompt_tokens"] as? Int)
            // Earlier messages of the request are ignored: only the last user message is the turn.
            let second = try await chat(
                s,
                [
                    "session_id": id, "max_tokens": 24,
                    "messages": [
                        user("Ignore me."), ["role": "assistant", "content": "Ignored too."], user("What is my name?"),
                    ],
                ])
            #expect(second.status == 200, "\(second.text)")
            let answer2 = try #require(Self.content(second))
            let usage2 = try #require(second.json?["usage"] as? [String: Any])
            let details = try #require(usage2["prompt_tokens_details"] as? [String: Any])
            let cached = try #require(details["cached_tokens"] as? Int)
            let prompt2 = try #require(usage2["prompt_tokens"] as? Int)
            #expect(cached >= prompt1, "turn 2 reprocessed turn 1: \(usage2)")
            #expect(prompt2 > cached)
            let entries = try await transcript(s, id)
            #expect(
                entries.map { $0["type"] as? String ?? "" } == [
                    "instructions", "prompt", "response", "prompt", "response",
                ])
            #expect(
                entries.map { $0["content"] as? String ?? "" }.dropFirst() == [
                    "My name is Ada. Say hello to me.", answer1, "What is my name?", answer2,
                ])
            #expect(entries.last?["status"] as? String == "completed")
            #expect(entries.last?["request_id"] as? String == second.header("X-Request-Id"))
        }
    }

    @Test func streamingTurnSendsDeltasUsageAndDone() async throws {
        try await RunningServer.with { s in
            let id = try await createSession(s, ["options": ["temperature": 0]])
            let (_, status, reader) = try await stream(
                s,
                [
                    "session_id": id, "messages": [user("Count from one to five.")], "max_tokens": 32,
                    "stream_options": ["include_usage": true],
                ])
            #expect(status == 200)
            let events = reader.events
            #expect(events.allSatisfy { $0.name.isEmpty })
            #expect(events.last?.data == "[DONE]")
            let chunks = events.dropLast().map { jsonObject($0.data) }
            #expect(chunks.allSatisfy { $0["object"] as? String == "chat.completion.chunk" })
            let firstDelta = (chunks.first?["choices"] as? [[String: Any]])?.first?["delta"] as? [String: Any]
            #expect(firstDelta?["role"] as? String == "assistant")
            let finish = chunks.compactMap { ($0["choices"] as? [[String: Any]])?.first?["finish_reason"] as? String }
            #expect(finish.count == 1)
            let usage = try #require(chunks.last?["usage"] as? [String: Any])
            let text = Self.deltas(reader).joined()
            #expect(!text.isEmpty)
            #expect((usage["completion_tokens"] as? Int ?? 0) > 0)
            let entries = try await transcript(s, id)
            #expect(entries.last?["type"] as? String == "response")
            #expect(entries.last?["content"] as? String == text)
            #expect(entries.last?["status"] as? String == "completed")
        }
    }

    @Test func unknownSessionIsA404InOpenAIsShape() async throws {
        try await RunningServer.with { s in
            let r = try await chat(s, ["session_id": "nope", "messages": [user("hi")]])
            #expect(r.status == 404)
            let error = try #require(r.json?["error"] as? [String: Any])
            #expect(Set(error.keys) == ["message", "type", "param", "code"])
            #expect(error["code"] as? String == "session_not_found")
            #expect(error["param"] as? String == "session_id")
            #expect(error["type"] as? String == "invalid_request_error")
            let streamed = try await stream(s, ["session_id": "nope", "messages": [user("hi")]])
            #expect(streamed.1 == 404)
            // on_busy needs a session; a session turn needs a user message.
            let stray = try await chat(s, ["on_busy": "reject", "messages": [user("hi")]])
            #expect(stray.status == 400 && (stray.json?["error"] as? [String: Any])?["param"] as? String == "on_busy")
            let id = try await createSession(s)
            let noUser = try await chat(s, ["session_id": id, "messages": [["role": "system", "content": "x"]]])
            #expect(
                noUser.status == 400 && (noUser.json?["error"] as? [String: Any])?["param"] as? String == "messages")
            let badPolicy = try await chat(s, ["session_id": id, "on_busy": "sometimes", "messages": [user("hi")]])
            #expect(badPolicy.status == 400)
            #expect(try await transcript(s, id).isEmpty)
        }
    }

    @Test func busyPoliciesAndDisconnectFollowTheSession() async throws {
        try await RunningServer.with(configure: { $0.maxSessionQueue = 1 }) { s in
            let id = try await createSession(s, ["on_busy": "reject"])
            let long: [String: Any] = [
                "session_id": id, "messages": [user("Tell a long story.")], "max_tokens": 1500, "ignore_eos": true,
            ]
            // The role chunk comes at once; wait for a content delta so the turn is generating.
            let (runner, status, _) = try await stream(s, long) { Self.deltas($0).contains { !$0.isEmpty } }
            #expect(status == 200)
            let busy = try await chat(s, ["session_id": id, "messages": [user("hi")]])
            #expect(busy.status == 409, "\(busy.text)")
            let error = try #require(busy.json?["error"] as? [String: Any])
            #expect(Set(error.keys) == ["message", "type", "param", "code"])
            #expect(error["code"] as? String == "session_busy" && error["param"] as? String == "session_id")
            // The request's on_busy overrides the session's; the queue holds one.
            let (waiter, waitStatus, _) = try await stream(
                s, ["session_id": id, "on_busy": "queue", "messages": [user("hi")]]
            ) { !$0.events.isEmpty }
            #expect(waitStatus == 200)
            #expect(
                await eventually {
                    (try? s.client().request("GET", "/v1/sessions/\(id)").json?["queued"] as? Int) == 1
                })
            let full = try await chat(s, ["session_id": id, "on_busy": "queue", "messages": [user("hi")]])
            #expect(full.status == 429 && full.errorCode == "session_queue_full")
            waiter.close()
            // A disconnect stops the running turn as on the native endpoint: recorded as cancelled.
            runner.close()
            #expect(
                await eventually(timeout: .seconds(20)) {
                    (try? s.client().request("GET", "/v1/sessions/\(id)").json?["status"] as? String) == "idle"
                })
            let entries = try await transcript(s, id)
            let last = try #require(entries.last)
            #expect(last["type"] as? String == "response" && last["status"] as? String == "cancelled")
            #expect(last["reason"] as? String == "client_disconnected")
        }
    }
}
