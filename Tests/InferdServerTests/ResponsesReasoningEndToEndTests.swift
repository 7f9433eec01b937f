import Backend
import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// A thinking model's answer on the Responses API (a scripted backend reporting Qwen 3's real
/// template, so answers may reason): the reasoning is a `reasoning` output item before the
/// message, streamed as `response.reasoning_text.*` events, kept in the stored response and in a
/// resumed stream, counted in `reasoning_tokens`, and given back to the template as the
/// assistant turn's reasoning, whether the chain is continued or the items are sent in `input`.
@Suite struct ResponsesReasoningEndToEndTests {
    static let thought = "Let me see."
    static let answer = "It is noon."
    static let text = "<think>\n\(thought)\n</think>\n\n\(answer)"

    /// Plays `text` one character a step; with `gate`, waits after `holdAt` characters until it opens.
    static func backend(_ text: String = text, gate: Locked<Bool>? = nil, holdAt: Int = 12) throws -> ScriptedBackend {
        let template = try ToolCallingScriptedEndToEndTests.qwen3Template()
        return ScriptedBackend(chatTemplateSource: template) { _ in
            var steps: [ScriptedBackend.Step] = []
            for (n, i) in text.indices.enumerated() {
                steps.append(.text(String(text[...i])))
                if let gate, n + 1 == holdAt {
                    steps.append(
                        .hold { while !gate.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) } })
                }
            }
            return steps + [.finish(.stop)]
        }
    }

    static func post(_ s: RunningServer, _ body: [String: Any]) async throws -> RawResponse {
        var b: [String: Any] = ["model": "scripted"]
        b.merge(body) { _, x in x }
        let json = jsonString(b)
        return try await offPool { try s.client(timeout: 30).postJSON("/v1/responses", json) }
    }

    /// The reasoning item then the message, as a final response has them.
    static func checkOutput(_ response: [String: Any], status: String = "completed") {
        let output = response["output"] as? [[String: Any]] ?? []
        #expect(output.map { $0["type"] as? String } == ["reasoning", "message"], "\(response)")
        guard output.count == 2 else { return }
        let reasoning = output[0]
        #expect((reasoning["id"] as? String)?.hasPrefix("rs_") == true)
        #expect(reasoning["status"] as? String == status)
        #expect((reasoning["summary"] as? [Any])?.isEmpty == true)
        let parts = reasoning["content"] as? [[String: Any]] ?? []
        #expect(parts.count == 1 && parts.first?["type"] as? String == "reasoning_text", "\(reasoning)")
        #expect(parts.first?["text"] as? String == thought)
        #expect(reasoning["role"] == nil && parts.first?["annotations"] == nil, "only the reasoning item's own fields")
        let message = (output[1]["content"] as? [[String: Any]])?.first?["text"] as? String
        #expect(message == answer, "\(output[1])")
        let usage = response["usage"] as? [String: Any] ?? [:]
        let reasoningTokens = (usage["output_tokens_details"] as? [String: Any])?["reasoning_tokens"] as? Int ?? -1
        // One token a character here: the reasoning lasted until its text was whole, not past `</think>`.
        #expect(
            ("<think>\n" + thought).count <= reasoningTokens
                && reasoningTokens <= ("<think>\n\(thought)\n</think>").count,
            "\(usage)")
        #expect(reasoningTokens < usage["output_tokens"] as? Int ?? 0)
    }

    @Test func theReasoningIsAnItemBeforeTheMessageAndIsStored() async throws {
        let backend = try Self.backend()
        try await RunningServer.with(state: .ready(backend)) { s in
            let r = try await Self.post(s, ["input": "Time?"])
            #expect(r.status == 200, "\(r.text)")
            let response = try #require(r.json)
            Self.checkOutput(response)
            let id = try #require(response["id"] as? String)
            let stored = try await offPool { try s.client().request("GET", "/v1/responses/\(id)") }
            Self.checkOutput(try #require(stored.json))
            #expect(
                ((stored.json?["output"] as? [[String: Any]])?.first?["id"] as? String)
                    == (response["output"] as? [[String: Any]])?.first?["id"] as? String)
        }
    }

    @Test func theStreamCarriesReasoningEventsInOrder() async throws {
        let backend = try Self.backend()
        try await RunningServer.with(state: .ready(backend)) { s in
            let body = jsonString(["model": "scripted", "input": "Time?", "stream": true])
            let reader = try await offPool { () -> SSEReader in
                let c = try s.client(timeout: 30)
                let (status, _) = try c.startStream("/v1/responses", body)
                guard status == 200 else { throw ClientError(description: "status \(status)") }
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.name == "response.completed" } }
                return reader
            }
            let events = reader.events.map { jsonObject($0.data) }
            #expect(events.map { $0["sequence_number"] as? Int } == Array(0..<events.count).map { Optional($0) })
            let types = events.compactMap { $0["type"] as? String }
            #expect(types == reader.events.map(\.name))
            let added = try #require(events.first { $0["type"] as? String == "response.output_item.added" })
            let item = try #require(added["item"] as? [String: Any])
            #expect(item["type"] as? String == "reasoning" && added["output_index"] as? Int == 0, "\(added)")
            #expect(item["status"] as? String == "in_progress" && (item["content"] as? [Any])?.isEmpty == true)
            let itemID = try #require(item["id"] as? String)
            let deltas = events.filter { $0["type"] as? String == "response.reasoning_text.delta" }
            #expect(deltas.count > 1, "\(types)")
            #expect(deltas.allSatisfy { $0["item_id"] as? String == itemID && $0["output_index"] as? Int == 0 })
            #expect(deltas.allSatisfy { $0["content_index"] as? Int == 0 })
            #expect(deltas.compactMap { $0["delta"] as? String }.joined() == Self.thought)
            let done = try #require(events.first { $0["type"] as? String == "response.reasoning_text.done" })
            #expect(done["text"] as? String == Self.thought && done["item_id"] as? String == itemID)
            let text = events.filter { $0["type"] as? String == "response.output_text.delta" }
                .compactMap { $0["delta"] as? String }.joined()
            #expect(text == Self.answer)
            // The reasoning item opens first, its deltas come before any text, and it ends (its
            // text's done, then its item's done, `completed`) once `</think>` is written, before
            // the message item opens, as OpenAI's streams order them.
            let firstText = try #require(types.firstIndex(of: "response.output_text.delta"))
            let lastReasoning = try #require(types.lastIndex(of: "response.reasoning_text.delta"))
            #expect(types.firstIndex(of: "response.output_item.added")! < lastReasoning && lastReasoning < firstText)
            let d = try #require(types.firstIndex(of: "response.reasoning_text.done"))
            #expect(types[d + 1] == "response.output_item.done")
            let ended = events[d + 1]["item"] as? [String: Any] ?? [:]
            #expect(ended["type"] as? String == "reasoning" && ended["status"] as? String == "completed")
            let messageAdded = try #require(types.lastIndex(of: "response.output_item.added"))
            #expect(lastReasoning < d && d + 1 < messageAdded && messageAdded < firstText, "\(types)")
            #expect(types.filter { $0 == "response.reasoning_text.done" }.count == 1)
            #expect(types.filter { $0 == "response.output_item.done" }.count == 2)
            #expect(types.last == "response.completed")
            Self.checkOutput(try #require(events.last?["response"] as? [String: Any]))
        }
    }

    @Test func aResumedStreamKeepsTheReasoning() async throws {
        let gate = Locked(false)
        let backend = try Self.backend(gate: gate, holdAt: 12)
        try await RunningServer.with(state: .ready(backend)) { s in
            let body = jsonString(["model": "scripted", "input": "Time?", "background": true, "stream": true])
            let first = try await offPool { () -> SSEReader in
                let c = try s.client(timeout: 10)
                let (status, _) = try c.startStream("/v1/responses", body)
                guard status == 200 else { throw ClientError(description: "status \(status)") }
                var reader = SSEReader()
                try c.readEvents(into: &reader) { r in
                    r.events.filter { $0.name == "response.reasoning_text.delta" }.count >= 2
                }
                c.close()
                return reader
            }
            let id = try #require((jsonObject(first.events[0].data)["response"] as? [String: Any])?["id"] as? String)
            let lastID = try #require(first.events.last?.id)
            let (client, status, partial) = try await ResponsesResumeEndToEndTests.open(
                s, "/v1/responses/\(id)?stream=true", headers: [("Last-Event-ID", lastID)]
            ) { _ in true }
            #expect(status == 200)
            gate.withLock { $0 = true }
            let second = try await offPool { () -> SSEReader in
                var r = partial
                try client.readEvents(into: &r) { r in r.events.contains { $0.name == "response.completed" } }
                client.close()
                return r
            }
            let all = first.events + second.events
            #expect(
                all.compactMap(ResponsesResumeEndToEndTests.sequence) == Array(0..<all.count), "no gap, no duplicate")
            let reasoning = all.filter { $0.name == "response.reasoning_text.delta" }
                .compactMap { jsonObject($0.data)["delta"] as? String }.joined()
            #expect(reasoning == Self.thought)
            // Replayed from the stored record after the end: the same events, from starting_after.
            let (c, st, replay) = try await ResponsesResumeEndToEndTests.open(
                s, "/v1/responses/\(id)?stream=true&starting_after=1"
            ) { r in r.events.contains { $0.name == "response.completed" } }
            c.close()
            #expect(st == 200)
            #expect(replay.events.map(\.data) == Array(all.dropFirst(2)).map(\.data))
            let stored = try await offPool { try s.client().request("GET", "/v1/responses/\(id)") }
            Self.checkOutput(try #require(stored.json))
        }
    }

    /// The assistant turns the backend was last given (the template's input).
    static func assistantTurns(_ backend: ScriptedBackend) -> [ChatMessage] {
        guard case .conversation(_, let messages, _)? = backend.requests.last?.prompt.input else { return [] }
        return messages.filter { $0.role == .assistant }
    }

    @Test func reasoningGivenBackReachesTheTemplate() async throws {
        let backend = try Self.backend()
        try await RunningServer.with(state: .ready(backend)) { s in
            // Continued by previous_response_id: the stored answer carries its reasoning.
            let first = try #require(try await Self.post(s, ["input": "Time?"]).json)
            let id = try #require(first["id"] as? String)
            let next = try await Self.post(s, ["input": "And now?", "previous_response_id": id])
            #expect(next.status == 200, "\(next.text)")
            var turns = Self.assistantTurns(backend)
            #expect(turns.count == 1 && turns.first?.reasoning == Self.thought && turns.first?.content == Self.answer)

            // Sent back in input, as a client keeping its own context does: the item as it came out.
            let items = first["output"] as? [[String: Any]] ?? []
            let input: [Any] =
                [["role": "user", "content": "Time?"]] + items + [["role": "user", "content": "Again?"]]
            let again = try await Self.post(s, ["input": input, "store": false])
            #expect(again.status == 200, "\(again.text)")
            turns = Self.assistantTurns(backend)
            #expect(turns.count == 1 && turns.first?.reasoning == Self.thought && turns.first?.content == Self.answer)

            // A summary alone stands for the reasoning; encrypted reasoning is refused, naming its field.
            let summary: [String: Any] = [
                "type": "reasoning", "summary": [["type": "summary_text", "text": "Brief."]],
            ]
            let summarised = try await Self.post(
                s,
                ["input": [summary, ["role": "assistant", "content": "Noon."], ["role": "user", "content": "Ok?"]]])
            #expect(summarised.status == 200, "\(summarised.text)")
            #expect(Self.assistantTurns(backend).first?.reasoning == "Brief.")
            let stored = try #require(summarised.json?["id"] as? String)
            let listed = try await offPool {
                try s.client().request("GET", "/v1/responses/\(stored)/input_items?order=asc")
            }
            let kinds = (listed.json?["data"] as? [[String: Any]] ?? []).map { $0["type"] as? String }
            #expect(kinds == ["reasoning", "message", "message"], "\(listed.text)")
            var encrypted = summary
            encrypted["encrypted_content"] = "gAAAA"
            let refused = try await Self.post(s, ["input": [encrypted, ["role": "user", "content": "Ok?"]]])
            #expect(refused.status == 400)
            #expect(WireError(refused).param == "input[0].encrypted_content", "\(refused.text)")
            let badPart = try await Self.post(
                s,
                ["input": [["type": "reasoning", "summary": [], "content": [["type": "output_text", "text": "x"]]]]])
            #expect(badPart.status == 400 && WireError(badPart).param == "input[0].content[0].type", "\(badPart.text)")
        }
    }

    /// Cut off inside its reasoning: the item is `incomplete` and ends with the response.
    @Test func reasoningCutOffIsIncomplete() async throws {
        let backend = ScriptedBackend(chatTemplateSource: try ToolCallingScriptedEndToEndTests.qwen3Template()) { _ in
            let text = "<think>\nStill thinking"
            return text.indices.map { .text(String(text[...$0])) } + [.finish(.length)]
        }
        try await RunningServer.with(state: .ready(backend)) { s in
            let r = try #require(try await Self.post(s, ["input": "Time?"]).json)
            #expect(r["status"] as? String == "incomplete", "\(r)")
            let output = r["output"] as? [[String: Any]] ?? []
            #expect(output.map { $0["type"] as? String } == ["reasoning"], "\(r)")
            #expect(output.first?["status"] as? String == "incomplete")
            #expect((output.first?["content"] as? [[String: Any]])?.first?["text"] as? String == "Still thinking")
        }
    }

    @Test func anAnswerWithoutReasoningHasNoReasoningItem() async throws {
        let backend = try Self.backend("Just noon.")
        try await RunningServer.with(state: .ready(backend)) { s in
            let r = try #require(try await Self.post(s, ["input": "Time?"]).json)
            #expect((r["output"] as? [[String: Any]])?.map { $0["type"] as? String } == ["message"], "\(r)")
            let usage = r["usage"] as? [String: Any] ?? [:]
            #expect((usage["output_tokens_details"] as? [String: Any])?["reasoning_tokens"] as? Int == 0)
        }
    }
}
