import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Function tools in a conversation (#33 parts 5 and 6) with the default model: a turn with
/// `tool_choice: required` streams a `function_call` item, the conversation's items show the call
/// (and, after the next turn, its `function_call_output`), the next turn answers it, and results
/// that answer no call of the conversation, or input that is neither results nor one user
/// message, are refused naming the item. What the model is shown of such turns is checked with a
/// scripted backend (NativeToolsEndToEndTests), the stored transcript by ToolTranscriptStoreTests.
@Suite(.serialized) struct ConversationToolsEndToEndTests {
    typealias R = ResponsesAPIEndToEndTests
    typealias T = ResponsesToolsEndToEndTests

    static func events(_ s: RunningServer, _ body: String) async throws -> [[String: Any]] {
        let text = try await offPool { () -> String in
            let c = try s.client(timeout: 120)
            let (status, _) = try c.startStream("/v1/responses", body)
            guard status == 200 else { throw ClientError(description: "status \(status)") }
            var reader = SSEReader()
            try c.readEvents(into: &reader) { $0.events.contains { $0.name == "response.completed" } }
            return reader.text
        }
        return SSEReader(text: text).events.map { jsonObject($0.data) }
    }

    @Test func aConversationCarriesCallsAndTheirOutputsAcrossTurns() async throws {
        try await RunningServer.with { s in
            let created = try await R.post(s, "/v1/conversations", "{}")
            let conv = try #require(created.json?["id"] as? String, "\(created.text)")
            let first = try T.body(
                ["conversation": conv, "tool_choice": "required", "parallel_tool_calls": false, "stream": true])
            let events = try await Self.events(s, first)
            let response = try #require(events.last?["response"] as? [String: Any])
            let calls = try T.calls(response)
            #expect(calls.count == 1, "\(response)")
            let callID = try #require(calls.first?["call_id"] as? String)
            #expect(response["tool_choice"] as? String == "required")
            // The conversation's items: the user message, then the call (the model wrote no text
            // before it, or a message item first).
            let listed = try await R.get(s, "/v1/conversations/\(conv)/items?order=asc")
            let items = try #require(listed.json?["data"] as? [[String: Any]], "\(listed.text)")
            let call = try #require(items.first { $0["type"] as? String == "function_call" }, "\(items)")
            #expect(
                call["call_id"] as? String == callID && call["arguments"] as? String == calls[0]["arguments"] as? String
            )
            let callItem = try #require(call["id"] as? String)
            #expect(
                try await R.get(s, "/v1/conversations/\(conv)/items/\(callItem)").json?["call_id"] as? String == callID)
            // A result for a call the conversation never made names its item.
            let stray = try T.body(
                ["conversation": conv],
                input: [["type": "function_call_output", "call_id": "call_nobody", "output": "18"]])
            let refused = try await T.post(s, stray)
            #expect(
                WireError(refused).status == 400 && WireError(refused).param == "input[0].call_id", "\(refused.text)")
            // A user message must end the input.
            let order = try T.body(
                ["conversation": conv],
                input: [
                    ["role": "user", "content": "hi"],
                    ["type": "function_call_output", "call_id": callID, "output": "18"],
                ])
            let misordered = try await T.post(s, order)
            #expect(
                WireError(misordered).status == 400 && WireError(misordered).param == "input[1]", "\(misordered.text)")
            // The next turn answers the call; the model answers in text.
            let second = try T.body(
                ["conversation": conv, "tool_choice": "none"],
                input: [["type": "function_call_output", "call_id": callID, "output": "18 degrees and sunny"]])
            let answered = try await T.post(s, second)
            let json = try #require(answered.json, "\(answered.text)")
            #expect(json["status"] as? String == "completed", "\(answered.text)")
            let output = json["output"] as? [[String: Any]] ?? []
            #expect(!output.isEmpty && output.allSatisfy { $0["type"] as? String == "message" }, "\(output)")
            let after = try await R.get(s, "/v1/conversations/\(conv)/items?order=asc")
            let types = (after.json?["data"] as? [[String: Any]] ?? []).map { $0["type"] as? String ?? "" }
            let callAt = try #require(types.firstIndex(of: "function_call"), "\(types)")
            #expect(types[(callAt + 1)...].first == "function_call_output", "\(types)")
            let outputItem = (after.json?["data"] as? [[String: Any]] ?? []).first {
                $0["type"] as? String == "function_call_output"
            }
            #expect(
                outputItem?["call_id"] as? String == callID
                    && outputItem?["output"] as? String == "18 degrees and sunny")
            // Deleting the call deletes the response that made it.
            let deleted = try await R.get(s, "/v1/conversations/\(conv)/items/\(callItem)", method: "DELETE")
            #expect(deleted.status == 200, "\(deleted.text)")
            let left = try await R.get(s, "/v1/conversations/\(conv)/items?order=asc")
            #expect(
                !((left.json?["data"] as? [[String: Any]] ?? []).contains { $0["type"] as? String == "function_call" }))
        }
    }
}
