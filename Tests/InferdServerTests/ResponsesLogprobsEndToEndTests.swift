import Foundation
import TestSupport
import Testing

/// The Responses API's log-probabilities (#34): `include: ["message.output_text.logprobs"]` with
/// `top_logprobs` puts the answer's tokens on its `output_text` part, the same entries chat
/// gives for the same conversation; streamed, each `response.output_text.delta` carries the
/// tokens it completes and `.done` all of them; a stored response keeps them (fetched and
/// replayed alike); with tools or in a conversation they are refused naming `include`.
@Suite(.serialized) struct ResponsesLogprobsEndToEndTests {
    static let ask = "Name three colours."

    static func post(_ s: RunningServer, _ path: String, _ body: [String: Any]) async throws -> RawResponse {
        let json = jsonString(body)
        return try await offPool { try s.client(timeout: 120).postJSON(path, json) }
    }

    static func base() throws -> [String: Any] {
        [
            "model": try SharedModel.engine().modelName, "input": ask, "temperature": 0, "max_output_tokens": 20,
            "include": ["message.output_text.logprobs"], "top_logprobs": 2,
        ]
    }

    static func part(_ response: [String: Any]?) -> [String: Any]? {
        let item = (response?["output"] as? [[String: Any]])?.first
        return (item?["content"] as? [[String: Any]])?.first
    }

    static func pairs(_ entries: [[String: Any]]) -> [String] {
        entries.map { "\($0["token"] as? String ?? "?")@\($0["logprob"] as? Double ?? 1)" }
    }

    @Test func outputTextCarriesChatsEntriesPlainStreamedAndStored() async throws {
        try await RunningServer.with { s in
            let r = try await Self.post(s, "/v1/responses", try Self.base())
            let part = try #require(Self.part(r.json), "\(r.text)")
            let text = try #require(part["text"] as? String)
            let entries = try #require(part["logprobs"] as? [[String: Any]], "\(part)")
            let bytes = entries.flatMap { $0["bytes"] as? [Int] ?? [] }.map { UInt8($0) }
            #expect(!entries.isEmpty && String(decoding: bytes, as: UTF8.self) == text)
            for e in entries {
                let top = try #require(e["top_logprobs"] as? [[String: Any]])
                #expect(top.count == 2 && top.first?["token"] as? String == e["token"] as? String, "greedy")
            }
            // Chat, same conversation, same tokens and values.
            let chat = try await Self.post(
                s, "/v1/chat/completions",
                [
                    "model": try SharedModel.engine().modelName, "messages": [["role": "user", "content": Self.ask]],
                    "temperature": 0, "max_tokens": 20, "logprobs": true, "top_logprobs": 2,
                ])
            let chatChoice = try #require((chat.json?["choices"] as? [[String: Any]])?.first, "\(chat.text)")
            let chatEntries = try #require((chatChoice["logprobs"] as? [String: Any])?["content"] as? [[String: Any]])
            #expect(Self.pairs(entries) == Self.pairs(chatEntries))

            // Streamed: the deltas' entries, in order, are the whole answer's; `.done` has them all.
            var streamed = try Self.base()
            streamed["stream"] = true
            streamed["store"] = true
            let body = jsonString(streamed)
            let raw = try await offPool { () -> String in
                let c = try s.client(timeout: 120)
                _ = try c.startStream("/v1/responses", body)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.name == "response.completed" } }
                return reader.text
            }
            let events = SSEReader(text: raw).events.map { jsonObject($0.data) }
            let deltas = events.filter { $0["type"] as? String == "response.output_text.delta" }
            let fromDeltas = deltas.flatMap { $0["logprobs"] as? [[String: Any]] ?? [] }
            #expect(Self.pairs(fromDeltas) == Self.pairs(entries))
            let done = try #require(events.first { $0["type"] as? String == "response.output_text.done" })
            #expect(Self.pairs(done["logprobs"] as? [[String: Any]] ?? []) == Self.pairs(entries))
            // Stored: fetched, and its stream replayed, with the same entries.
            let completed = try #require(events.last?["response"] as? [String: Any])
            let id = try #require(completed["id"] as? String)
            let fetched = try await offPool { try s.client().request("GET", "/v1/responses/\(id)") }
            #expect(Self.pairs(Self.part(fetched.json)?["logprobs"] as? [[String: Any]] ?? []) == Self.pairs(entries))
            let replayed = try await ResponsesAPIEndToEndTests.readStream(s, "/v1/responses/\(id)?stream=true")
            let replayedDeltas = replayed.filter { $0["type"] as? String == "response.output_text.delta" }
            #expect(
                replayedDeltas.map { Self.pairs($0["logprobs"] as? [[String: Any]] ?? []) }
                    == deltas.map { Self.pairs($0["logprobs"] as? [[String: Any]] ?? []) })
        }
    }

    @Test func withoutIncludeThereAreNoneAndRefusalsNameInclude() async throws {
        try await RunningServer.with { s in
            var plain = try Self.base()
            plain["include"] = nil
            plain["top_logprobs"] = nil
            let r = try await Self.post(s, "/v1/responses", plain)
            #expect(Self.part(r.json)?["logprobs"] == nil, "\(r.text)")

            var withTools = try Self.base()
            withTools["tools"] = [["type": "function", "name": "f", "parameters": ["type": "object"]]]
            let tools = try await Self.post(s, "/v1/responses", withTools)
            #expect(tools.status == 400 && WireError(tools).param == "include", "\(tools.text)")

            let conversation = try await Self.post(s, "/v1/conversations", [:])
            let conversationID = try #require(conversation.json?["id"] as? String, "\(conversation.text)")
            var inConversation = try Self.base()
            inConversation["conversation"] = conversationID
            let refused = try await Self.post(s, "/v1/responses", inConversation)
            #expect(refused.status == 400 && WireError(refused).param == "include", "\(refused.text)")
        }
    }
}
