import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// An id with a NUL (or any control character) is refused with 400 naming where it was, from a
/// path, a query, a body field or `X-Request-Id`: it used to resolve to what precedes the NUL
/// (`GET /v1/sessions/ID%00junk` answered session ID). The model is not the subject.
@Suite struct ControlCharacterIDsEndToEndTests {
    static let backend = ScriptedBackend(reply: "Hello.")

    static func call(
        _ s: RunningServer, _ method: String, _ path: String, _ body: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> RawResponse {
        try await offPool {
            var h = headers
            if body != nil { h.append(("Content-Type", "application/json")) }
            return try s.client().request(method, path, headers: h, body: Array((body ?? "").utf8))
        }
    }

    @Test func idsWithControlCharactersAre400NamingTheirField() async throws {
        try await RunningServer.with(state: .ready(Self.backend)) { s in
            let model = Self.backend.modelName
            let session = try #require(
                try await Self.call(s, "POST", "/v1/sessions", "{}").json?["id"] as? String)
            let response = try #require(
                try await Self.call(s, "POST", "/v1/responses", jsonString(["model": model, "input": "Hi"])).json?[
                    "id"] as? String)
            let conversation = try #require(
                try await Self.call(s, "POST", "/v1/conversations", "{}").json?["id"] as? String)
            // The ids themselves resolve.
            #expect(try await Self.call(s, "GET", "/v1/sessions/\(session)").status == 200)
            #expect(try await Self.call(s, "GET", "/v1/responses/\(response)").status == 200)

            let cases: [(String, String, String?, String)] = [
                ("GET", "/v1/sessions/\(session)%00junk", nil, "id"),
                ("GET", "/v1/sessions/\(session)%00", nil, "id"),
                ("DELETE", "/v1/sessions/\(session)%01", nil, "id"),
                ("GET", "/v1/responses/\(response)%00x", nil, "id"),
                ("GET", "/v1/responses/\(response)%0A", nil, "id"),
                ("GET", "/v1/conversations/\(conversation)%00", nil, "id"),
                ("GET", "/v1/conversations/\(conversation)/items/msg_1%00", nil, "item_id"),
                ("POST", "/v1/requests/abc%00def/cancel", nil, "request_id"),
                ("GET", "/v1/sessions?after=\(session)%00x", nil, "after"),
                ("GET", "/v1/conversations/\(conversation)/items?after=x%1B", nil, "after"),
                ("GET", "/v1/responses/\(response)?stream=true&starting_after=1%00", nil, "starting_after"),
                (
                    "POST", "/v1/responses",
                    jsonString(["model": model, "input": "Hi", "previous_response_id": "\(response)\u{0}x"]),
                    "previous_response_id"
                ),
                (
                    "POST", "/v1/responses",
                    jsonString(["model": model, "input": "Hi", "conversation": "\(conversation)\u{0}"]),
                    "conversation"
                ),
                (
                    "POST", "/v1/responses",
                    jsonString(["model": model, "input": "Hi", "conversation": ["id": "\(conversation)\u{7F}"]]),
                    "conversation.id"
                ),
                (
                    "POST", "/v1/chat/completions",
                    jsonString([
                        "model": model, "session_id": "\(session)\u{0}x",
                        "messages": [["role": "user", "content": "Hi"]],
                    ]),
                    "session_id"
                ),
                ("POST", "/v1/sessions/\(session)/cancel", jsonString(["request_id": "r\u{0}1"]), "request_id"),
            ]
            for (method, path, body, field) in cases {
                let r = try await Self.call(s, method, path, body)
                let e = WireError(r)
                #expect(
                    e.status == 400 && e.code == "invalid_value" && e.param == field,
                    "\(method) \(path) \(body ?? ""): \(e)")
                #expect(e.message.contains("control character"), "\(e)")
            }
            // A request id with a control character is refused the same way, naming the header.
            let header = try await Self.call(
                s, "GET", "/v1/sessions/\(session)", headers: [("X-Request-Id", "abc\u{1}def")])
            #expect(WireError(header).status == 400 && WireError(header).param == "X-Request-Id", "\(header.text)")
            // Nothing was touched: the session is still there and took no turn.
            let still = try await Self.call(s, "GET", "/v1/sessions/\(session)")
            #expect(still.status == 200 && (still.json?["transcript"] as? [Any])?.count == 0)
        }
    }

    /// The check runs inside authentication: without a key the answer is 401, as for any path.
    @Test func authenticationComesFirst() async throws {
        let key = "alpha-key-0123456789"
        try await RunningServer.with(state: .ready(Self.backend), configure: { $0.apiKeys = key }) { s in
            let anonymous = try await Self.call(s, "GET", "/v1/sessions/sess_x%00y")
            #expect(anonymous.status == 401)
            let keyed = try await Self.call(
                s, "GET", "/v1/sessions/sess_x%00y", headers: [("Authorization", "Bearer \(key)")])
            #expect(keyed.status == 400 && WireError(keyed).param == "id")
        }
    }
}
