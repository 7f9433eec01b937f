import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Conversation items added and deleted by hand, over a real socket: they are the history the
/// next response's prompt is rendered from (its `input_tokens` equal the edited transcript's
/// rendering), a deletion cuts the kept KV cache back to before the deleted item (`cached_tokens`
/// is exactly the prefix the old and new prompts share), and an edit waits for a running response.
@Suite struct ConversationItemsEndToEndTests {
    typealias R = ResponsesAPIEndToEndTests
    static let system = "Answer in one sentence."

    func createConversation(_ s: RunningServer) async throws -> String {
        let created = try await R.post(
            s, "/v1/conversations", jsonString(["items": [["role": "system", "content": Self.system]]]))
        return try #require(created.json?["id"] as? String, "\(created.text)")
    }

    func respond(_ s: RunningServer, _ conv: String, _ text: String) async throws -> [String: Any] {
        let r = try await R.post(
            s, "/v1/responses", try R.body(text, ["conversation": conv, "max_output_tokens": 8, "temperature": 0]))
        return try #require(r.json, "\(r.text)")
    }

    static func usage(_ r: [String: Any]) -> (input: Int, cached: Int) {
        let u = r["usage"] as? [String: Any] ?? [:]
        return (
            u["input_tokens"] as? Int ?? -1,
            (u["input_tokens_details"] as? [String: Any])?["cached_tokens"] as? Int ?? -1
        )
    }

    func prompt(_ messages: [(ChatMessage.Role, String)]) throws -> [Int32] {
        try SharedModel.engine().prepare(
            .conversation(instructions: Self.system, messages: messages.map { ChatMessage(role: $0.0, content: $0.1) })
        ).tokens ?? []
    }

    @Test func addedAndDeletedItemsAreTheNextResponsesHistory() async throws {
        try await RunningServer.with { s in
            let conv = try await createConversation(s)
            let added = try await R.post(
                s, "/v1/conversations/\(conv)/items",
                jsonString([
                    "items": [
                        ["role": "user", "content": "My name is Ada."],
                        [
                            "type": "message", "role": "assistant",
                            "content": [["type": "output_text", "text": "Hi Ada."]],
                        ],
                    ]
                ]))
            let list = try #require(added.json, "\(added.text)")
            #expect(list["object"] as? String == "list" && list["has_more"] as? Bool == false)
            let data = try #require(list["data"] as? [[String: Any]])
            #expect(data.map { $0["role"] as? String } == ["user", "assistant"])
            #expect(data.map { $0["type"] as? String } == ["message", "message"])
            let ids = data.compactMap { $0["id"] as? String }
            #expect(ids.count == 2 && list["first_id"] as? String == ids[0] && list["last_id"] as? String == ids[1])
            let one = try await R.get(s, "/v1/conversations/\(conv)/items/\(ids[1])")
            #expect(R.outputText(["output": [one.json ?? [:]]]) == "Hi Ada.")

            let first = try await respond(s, conv, "What is my name?")
            let out1 = R.outputText(first) ?? ""
            let prompt1 = try prompt([(.user, "My name is Ada."), (.assistant, "Hi Ada."), (.user, "What is my name?")])
            #expect(Self.usage(first).input == prompt1.count, "\(first)")

            // Deleting the user item: it leaves the history, and the kept cache keeps only what
            // the old and new prompts share (the system message), never the deleted text.
            let deleted = try await R.get(s, "/v1/conversations/\(conv)/items/\(ids[0])", method: "DELETE")
            #expect(deleted.json?["id"] as? String == conv && deleted.json?["object"] as? String == "conversation")
            let gone = try await R.get(s, "/v1/conversations/\(conv)/items/\(ids[0])")
            #expect(WireError(gone).status == 404 && WireError(gone).param == "item_id", "\(gone.text)")
            let again = try await R.get(s, "/v1/conversations/\(conv)/items/\(ids[0])", method: "DELETE")
            #expect(WireError(again).status == 404 && WireError(again).param == "item_id", "\(again.text)")
            let second = try await respond(s, conv, "What is my name?")
            let prompt2 = try prompt([
                (.assistant, "Hi Ada."), (.user, "What is my name?"), (.assistant, out1), (.user, "What is my name?"),
            ])
            #expect(Self.usage(second).input == prompt2.count, "\(second)")
            let shared = zip(prompt1, prompt2).prefix { $0 == $1 }.count
            #expect(shared > 0 && Self.usage(second).cached == shared, "\(second)")
            let items = try #require(try await R.get(s, "/v1/conversations/\(conv)/items?order=asc").json)
            let roles = (items["data"] as? [[String: Any]])?.map { $0["role"] as? String }
            #expect(roles == ["system", "assistant", "user", "assistant", "user", "assistant"])
            // Ids stay: a new item never takes a deleted one's.
            let more = try await R.post(
                s, "/v1/conversations/\(conv)/items",
                jsonString(["items": [["role": "developer", "content": "Be kind."]]]))
            let newID = try #require((more.json?["data"] as? [[String: Any]])?.first?["id"] as? String, "\(more.text)")
            #expect(!ids.contains(newID))
            #expect(
                try await R.get(s, "/v1/conversations/\(conv)/items/\(newID)").json?["role"] as? String == "developer")
        }
    }

    @Test func badItemRequestsAreRefusedNamingTheField() async throws {
        try await RunningServer.with(state: .ready(ScriptedBackend(reply: "Fine."))) { s in
            let conv = try await createConversation(s)
            let path = "/v1/conversations/\(conv)/items"
            let user = ["role": "user", "content": "Hi"]
            for (body, param) in [
                (["items": []] as [String: Any], "items"),
                (["items": Array(repeating: user, count: 21)], "items"),
                (["items": [["role": "tool", "content": "x"]]], "items[0].role"),
                (["items": [user], "extra": 1], "extra"),
                ([:], "items"),
            ] {
                let r = try await R.post(s, path, jsonString(body))
                #expect(WireError(r).status == 400 && WireError(r).param == param, "\(body): \(r.text)")
            }
            let include = try await R.post(
                s, path + "?include=message.output_text.logprobs", jsonString(["items": [user]]))
            #expect(WireError(include).status == 400 && WireError(include).param == "include", "\(include.text)")
            for bad in ["msg_nope", "msg_\(conv.dropFirst(5))_99", "msg_000000000000000000000000_0"] {
                let r = try await R.get(s, "\(path)/\(bad)", method: "DELETE")
                #expect(WireError(r).status == 404 && WireError(r).param == "item_id", "\(bad): \(r.text)")
            }
            let unknown = try await R.post(
                s, "/v1/conversations/conv_000000000000000000000000/items", jsonString(["items": [user]]))
            #expect(WireError(unknown).status == 404, "\(unknown.text)")
            // Nothing refused was added.
            let items = try #require(try await R.get(s, path).json?["data"] as? [Any])
            #expect(items.count == 1)
        }
    }

    @Test func anotherKeysConversationIsNotFound() async throws {
        let (alpha, beta) = ("alpha-key-0123456789", "beta-key-0123456789x")
        try await RunningServer.with(
            state: .ready(ScriptedBackend(reply: "Fine.")), configure: { $0.apiKeys = "\(alpha),\(beta)" }
        ) { s in
            func call(_ method: String, _ path: String, key: String, _ body: Any? = nil) async throws -> RawResponse {
                let json = body.map { jsonString($0) }
                return try await offPool {
                    var headers = [("Authorization", "Bearer \(key)")]
                    if json != nil { headers.append(("Content-Type", "application/json")) }
                    return try s.client().request(method, path, headers: headers, body: Array((json ?? "").utf8))
                }
            }
            let conv = try #require(try await call("POST", "/v1/conversations", key: alpha, [:]).json?["id"] as? String)
            let items = ["items": [["role": "user", "content": "Mine."]]]
            let added = try await call("POST", "/v1/conversations/\(conv)/items", key: alpha, items)
            let id = try #require((added.json?["data"] as? [[String: Any]])?.first?["id"] as? String, "\(added.text)")
            let theirs = try await call("POST", "/v1/conversations/\(conv)/items", key: beta, items)
            #expect(theirs.status == 404 && WireError(theirs).param == "conversation_id", "\(theirs.text)")
            let delete = try await call("DELETE", "/v1/conversations/\(conv)/items/\(id)", key: beta)
            #expect(delete.status == 404, "\(delete.text)")
            let still = try await call("GET", "/v1/conversations/\(conv)/items", key: alpha)
            #expect((still.json?["data"] as? [Any])?.count == 1, "\(still.text)")
        }
    }

    @Test func anEditWaitsForTheRunningResponseOrIsRefusedWithReject() async throws {
        try await RunningServer.with { s in
            let conv = try await createConversation(s)
            let long = try R.body(
                "Count to a thousand.",
                ["conversation": conv, "background": true, "ignore_eos": true, "max_output_tokens": 48])
            let running = try await R.post(s, "/v1/responses", long)
            let rid = try #require(running.json?["id"] as? String, "\(running.text)")
            // Queued behind the response: applied only once it has finished.
            let added = try await R.post(
                s, "/v1/conversations/\(conv)/items", jsonString(["items": [["role": "user", "content": "Later."]]]))
            #expect(added.status == 200, "\(added.text)")
            // When the edit answers, the response's turn has ended (a turn ended later would still
            // be in progress here): the session's transcript, as the native API shows it.
            let sid = "sess_" + conv.dropFirst("conv_".count)
            let transcript = try #require(
                try await R.get(s, "/v1/sessions/\(sid)").json?["transcript"] as? [[String: Any]])
            #expect(transcript.map { $0["type"] as? String } == ["instructions", "prompt", "response", "user_item"])
            #expect(
                transcript[2]["status"] as? String == "completed"
                    && transcript[2]["finish_reason"] as? String == "length")
            // The response's own record is written just after its turn ends: wait for it.
            var response: [String: Any] = [:]
            for _ in 0..<100 {
                response = try #require(try await R.get(s, "/v1/responses/\(rid)").json)
                if response["status"] as? String != "in_progress" { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(response["status"] as? String == "incomplete", "ended by max_output_tokens: \(response)")
            let items = try #require(try await R.get(s, "/v1/conversations/\(conv)/items?order=asc").json)
            let data = try #require(items["data"] as? [[String: Any]])
            #expect(data.map { $0["role"] as? String } == ["system", "user", "assistant", "user"])
            #expect(R.outputText(["output": [data[2]]]) == R.outputText(response), "the whole answer, then the edit")

            // A session made with on_busy reject refuses an edit while a response runs.
            let session = try await offPool { try s.client().postJSON("/v1/sessions", #"{"on_busy":"reject"}"#) }
            let strictSession = try #require(session.json?["id"] as? String)
            let strict = "conv_" + strictSession.dropFirst("sess_".count)
            let busy = try await R.post(
                s, "/v1/responses",
                try R.body(
                    "Count to a thousand.",
                    ["conversation": strict, "background": true, "ignore_eos": true, "max_output_tokens": 4000]))
            let busyID = try #require(busy.json?["id"] as? String, "\(busy.text)")
            let refused = try await R.post(
                s, "/v1/conversations/\(strict)/items", jsonString(["items": [["role": "user", "content": "Now."]]]))
            #expect(WireError(refused).status == 409 && WireError(refused).code == "session_busy", "\(refused.text)")
            _ = try await offPool { try s.client().postJSON("/v1/responses/\(busyID)/cancel", "") }
            let later = try await R.post(
                s, "/v1/conversations/\(strict)/items", jsonString(["items": [["role": "user", "content": "Now."]]]))
            #expect(later.status == 200, "\(later.text)")
        }
    }
}
