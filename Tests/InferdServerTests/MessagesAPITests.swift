import Engine
import Foundation
import HTTPServer
import StructuredOutput
import TestSupport
import Testing

@testable import InferdServer

/// The Messages API's parts without a model: the stream's block events derived from snapshot
/// deltas (a state machine, no I/O), the error shapes, and over a socket with a scripted backend
/// the key as Anthropic's clients send it and session ownership. With the real model and the
/// official client: Tests/compat/test_messages.py.
@Suite struct MessagesAPITests {
    typealias Delta = ToolAnswerTracker.Delta

    @Test func blocksOpenAndCloseAsTheKindOfWhatArrivesChanges() {
        var b = MessagesStreamBuilder()
        var events = b.events(for: Delta(reasoning: "Let me"))
        events += b.events(for: Delta(reasoning: " think."))
        events += b.events(for: Delta(content: "It is"))
        events += b.events(for: Delta(content: " sunny."))
        events += b.events(
            for: Delta(calls: [.init(index: 0, id: "call_abc", name: "get_weather", arguments: "{\"city\":")]))
        events += b.events(for: Delta(calls: [.init(index: 0, arguments: " \"Paris\"}")]))
        events += b.events(
            for: Delta(calls: [.init(index: 1, id: "call_def", name: "get_time", arguments: "{}")]))
        events += b.close()
        #expect(
            events == [
                .blockStart(index: 0, block: .thinking("")), .thinkingDelta(index: 0, thinking: "Let me"),
                .thinkingDelta(index: 0, thinking: " think."), .blockStop(index: 0),
                .blockStart(index: 1, block: .text("")), .textDelta(index: 1, text: "It is"),
                .textDelta(index: 1, text: " sunny."), .blockStop(index: 1),
                .blockStart(index: 2, block: .toolUse(id: "toolu_abc", name: "get_weather", input: .object([]))),
                .inputJSONDelta(index: 2, partialJSON: "{\"city\":"),
                .inputJSONDelta(index: 2, partialJSON: " \"Paris\"}"), .blockStop(index: 2),
                .blockStart(index: 3, block: .toolUse(id: "toolu_def", name: "get_time", input: .object([]))),
                .inputJSONDelta(index: 3, partialJSON: "{}"), .blockStop(index: 3),
            ])
        // Nothing open: nothing to close; an empty delta opens nothing.
        #expect(b.close().isEmpty)
        #expect(b.events(for: Delta(content: "")).isEmpty)
    }

    @Test func eventsAreShapedAsAnthropicNamesThem() throws {
        let start = MessagesStreamEvent.messageStart(
            MessageBody(
                id: "msg_1", model: "m", content: [], stopReason: nil, stopSequence: nil,
                usage: MessagesUsage(inputTokens: 7)))
        #expect(start.name == "message_start")
        let message = try #require(jsonObject(start.data)["message"] as? [String: Any])
        #expect(message["stop_reason"] is NSNull && message["stop_sequence"] is NSNull)
        #expect(message["type"] as? String == "message" && message["role"] as? String == "assistant")
        #expect((message["usage"] as? [String: Any])?["input_tokens"] as? Int == 7)
        let delta = MessagesStreamEvent.inputJSONDelta(index: 2, partialJSON: "{\"a\"")
        #expect(delta.name == "content_block_delta")
        #expect(
            delta.data
                == #"{"delta":{"partial_json":"{\"a\"","type":"input_json_delta"},"index":2,"type":"content_block_delta"}"#
        )
        let end = MessagesStreamEvent.messageDelta(
            stopReason: "stop_sequence", stopSequence: "###",
            usage: MessagesUsage(GenerationUsage(promptTokens: 30, completionTokens: 5, cachedTokens: 12)))
        let body = jsonObject(end.data)
        #expect((body["delta"] as? [String: Any])?["stop_sequence"] as? String == "###")
        let usage = try #require(body["usage"] as? [String: Any])
        #expect(usage["input_tokens"] as? Int == 18 && usage["cache_read_input_tokens"] as? Int == 12)
        #expect(usage["output_tokens"] as? Int == 5 && usage["cache_creation_input_tokens"] as? Int == 0)
    }

    @Test func errorsTakeAnthropicTypesAndNameTheirField() {
        let busy = AnthropicError(
            OpenAIError(
                HTTPError(
                    status: 503, message: "queue full", type: "server_error", code: .serverBusy, retryAfterSeconds: 2)))
        #expect(busy.status == 529 && busy.type == "overloaded_error")
        #expect(busy.response.headers.contains { $0.0 == "retry-after" && $0.1 == "2" })
        let field = AnthropicError(OpenAIError.invalid("must be at least 1", param: "max_tokens"))
        #expect(field.type == "invalid_request_error" && field.wireMessage == "max_tokens: must be at least 1")
        #expect(AnthropicError(HTTPError.notFound("no session x")).type == "not_found_error")
        #expect(AnthropicError(OpenAIError(HTTPError.internalError())).type == "api_error")
        // Shared paths' field names in this API's spelling.
        #expect(MessagesRoutes.renamed(.invalid("x", param: "tools[1].parameters")).param == "tools.1.input_schema")
        #expect(MessagesRoutes.renamed(.invalid("x", param: "stop")).param == "stop_sequences")
        #expect(MessagesRoutes.renamed(.invalid("x", param: "reasoning_budget")).param == "thinking.budget_tokens")
    }

    static let alpha = "alpha-key-0123456789"
    static let beta = "beta-key-0123456789x"
    static let backend = ScriptedBackend(reply: "Hello there.")

    func post(_ s: RunningServer, _ path: String, _ body: [String: Any], headers: [(String, String)]) async throws
        -> RawResponse
    {
        let json = jsonString(body)
        return try await offPool {
            try s.client().request(
                "POST", path, headers: headers + [("Content-Type", "application/json")], body: Array(json.utf8))
        }
    }

    static var hello: [String: Any] {
        [
            "model": "scripted", "max_tokens": 64, "messages": [["role": "user", "content": "Hi"]],
        ]
    }

    @Test func theKeyComesAsXAPIKeyOrBearerAndRefusalsAreAnthropicShaped() async throws {
        try await RunningServer.with(state: .ready(Self.backend), configure: { $0.apiKeys = Self.alpha }) { s in
            let viaHeader = try await post(s, "/v1/messages", Self.hello, headers: [("x-api-key", Self.alpha)])
            #expect(viaHeader.status == 200, "\(viaHeader.text)")
            let content = viaHeader.json?["content"] as? [[String: Any]]
            #expect(content?.first?["text"] as? String == "Hello there.")
            #expect(viaHeader.json?["stop_reason"] as? String == "end_turn")
            let viaBearer = try await post(
                s, "/v1/messages", Self.hello, headers: [("Authorization", "Bearer \(Self.alpha)")])
            #expect(viaBearer.status == 200)
            for headers in [[("x-api-key", "wrong-key-0123456789")], []] {
                let refused = try await post(s, "/v1/messages", Self.hello, headers: headers)
                #expect(refused.status == 401)
                #expect(refused.json?["type"] as? String == "error")
                #expect((refused.json?["error"] as? [String: Any])?["type"] as? String == "authentication_error")
            }
            let counted = try await post(
                s, "/v1/messages/count_tokens",
                ["model": "scripted", "messages": [["role": "user", "content": "Hi"]]],
                headers: [("x-api-key", Self.alpha)])
            #expect(counted.status == 200 && (counted.json?["input_tokens"] as? Int ?? 0) > 0, "\(counted.text)")
            // The other routes take the header too: it is the same key.
            let sessions = try await offPool {
                try s.client().request("GET", "/v1/sessions", headers: [("x-api-key", Self.alpha)])
            }
            #expect(sessions.status == 200)
        }
    }

    @Test func anotherKeysSessionIsNotFound() async throws {
        try await RunningServer.with(
            state: .ready(Self.backend), configure: { $0.apiKeys = "\(Self.alpha),\(Self.beta)" }
        ) { s in
            let created = try await post(s, "/v1/sessions", [:], headers: [("x-api-key", Self.alpha)])
            let id = try #require(created.json?["id"] as? String)
            var body = Self.hello
            body["session_id"] = id
            let mine = try await post(s, "/v1/messages", body, headers: [("x-api-key", Self.alpha)])
            #expect(mine.status == 200, "\(mine.text)")
            let theirs = try await post(s, "/v1/messages", body, headers: [("x-api-key", Self.beta)])
            #expect(theirs.status == 404)
            let error = theirs.json?["error"] as? [String: Any]
            #expect(error?["type"] as? String == "not_found_error")
            #expect((error?["message"] as? String)?.hasPrefix("session_id:") == true)
        }
    }
}
