import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// OpenAI's Conversations API over inferd's sessions, with the real model: a conversation's
/// responses are turns of its session (history, kept KV cache, `on_busy`), its items are the
/// transcript.
@Suite struct ConversationsEndToEndTests {
    typealias R = ResponsesAPIEndToEndTests

    @Test func responsesInAConversationAreItsTurns() async throws {
        try await RunningServer.with { s in
            let created = try await R.post(
                s, "/v1/conversations",
                jsonString([
                    "metadata": ["topic": "names"],
                    "items": [["role": "system", "content": "Answer in one sentence."]],
                ]))
            let conv = try #require(created.json, "\(created.text)")
            let id = try #require(conv["id"] as? String)
            #expect(id.hasPrefix("conv_") && conv["object"] as? String == "conversation")
            #expect(conv["metadata"] as? [String: String] == ["topic": "names"])
            var outputs: [String] = []
            var usages: [[String: Any]] = []
            for (i, turn) in ["My name is Ada.", "What is my name?"].enumerated() {
                var extra: [String: Any] = ["conversation": i == 0 ? id : ["id": id], "max_output_tokens": 16]
                extra["temperature"] = 0
                let r = try await R.post(s, "/v1/responses", try R.body(turn, extra))
                let json = try #require(r.json, "\(r.text)")
                #expect((json["conversation"] as? [String: Any])?["id"] as? String == id)
                outputs.append(R.outputText(json) ?? "")
                usages.append(json["usage"] as? [String: Any] ?? [:])
            }
            // The second turn's prompt holds the first turn (its KV cache was kept).
            let cached = (usages[1]["input_tokens_details"] as? [String: Any])?["cached_tokens"] as? Int ?? 0
            #expect(cached >= (usages[0]["input_tokens"] as? Int ?? .max))
            let engine = try SharedModel.engine()
            let expected = try engine.prepare(
                .conversation(
                    instructions: "Answer in one sentence.",
                    messages: [
                        ChatMessage(role: .user, content: "My name is Ada."),
                        ChatMessage(role: .assistant, content: outputs[0]),
                        ChatMessage(role: .user, content: "What is my name?"),
                    ]))
            #expect(usages[1]["input_tokens"] as? Int == expected.tokenCount)
            let items = try #require(try await R.get(s, "/v1/conversations/\(id)/items?order=asc").json)
            let data = try #require(items["data"] as? [[String: Any]])
            #expect(data.map { $0["role"] as? String } == ["system", "user", "assistant", "user", "assistant"])
            #expect(
                data.compactMap { (($0["content"] as? [[String: Any]])?.first?["text"] as? String) } == [
                    "Answer in one sentence.", "My name is Ada.", outputs[0], "What is my name?", outputs[1],
                ])
            let itemID = try #require(data[2]["id"] as? String)
            let one = try await R.get(s, "/v1/conversations/\(id)/items/\(itemID)")
            #expect(R.outputText(["output": [one.json ?? [:]]]) == outputs[0])
            let page = try #require(try await R.get(s, "/v1/conversations/\(id)/items?limit=2").json)
            #expect((page["data"] as? [[String: Any]])?.map { $0["role"] as? String } == ["assistant", "user"])
            #expect(page["has_more"] as? Bool == true)
            // Metadata update, refusals, delete.
            let updated = try await offPool {
                try s.client().postJSON("/v1/conversations/\(id)", jsonString(["metadata": ["topic": "ada"]]))
            }
            #expect(updated.json?["metadata"] as? [String: String] == ["topic": "ada"])
            #expect(
                try await R.get(s, "/v1/conversations/\(id)").json?["metadata"] as? [String: String] == ["topic": "ada"]
            )
            let both = try await R.post(
                s, "/v1/responses", try R.body("Hi", ["conversation": id, "previous_response_id": "resp_x"]))
            #expect(WireError(both).status == 400)
            let add = try await offPool {
                try s.client().postJSON("/v1/conversations/\(id)/items", jsonString(["items": []]))
            }
            #expect(WireError(add).status == 400)
            let deleted = try await R.get(s, "/v1/conversations/\(id)", method: "DELETE")
            #expect(deleted.json?["deleted"] as? Bool == true)
            #expect(WireError(try await R.get(s, "/v1/conversations/\(id)")).status == 404)
            let gone = try await R.post(s, "/v1/responses", try R.body("Hi", ["conversation": id]))
            #expect(WireError(gone).status == 404 && WireError(gone).param == "conversation")
        }
    }

    @Test func aBusyConversationQueuesOrRejects() async throws {
        try await RunningServer.with { s in
            // A session made with on_busy reject is a conversation with that policy.
            let session = try await offPool { try s.client().postJSON("/v1/sessions", #"{"on_busy":"reject"}"#) }
            let sid = try #require(session.json?["id"] as? String)
            let conv = "conv_" + sid.dropFirst("sess_".count)
            let long = try R.body(
                "Count to a thousand.",
                ["conversation": conv, "background": true, "ignore_eos": true, "max_output_tokens": 4000])
            let running = try await R.post(s, "/v1/responses", long)
            let rid = try #require(running.json?["id"] as? String, "\(running.text)")
            let second = try await R.post(s, "/v1/responses", try R.body("Hi", ["conversation": conv]))
            #expect(WireError(second).status == 409 && WireError(second).param == "conversation", "\(second.text)")
            let cancelled = try await offPool { try s.client().postJSON("/v1/responses/\(rid)/cancel", "") }
            #expect(cancelled.json?["status"] as? String == "cancelled")
            // Idle again: the next response is admitted.
            let next = try await R.post(
                s, "/v1/responses", try R.body("Hi", ["conversation": conv, "max_output_tokens": 2]))
            #expect(next.status == 200, "\(next.text)")
        }
    }
}
