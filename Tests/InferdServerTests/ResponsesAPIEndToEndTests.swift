import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// OpenAI's Responses API (`/v1/responses`) over a real socket with the real model: answers
/// against llama.cpp's greedy reference, the exact event sequence, stored responses, chains,
/// background responses with cancel and resume, and refusals.
@Suite struct ResponsesAPIEndToEndTests {
    static func body(_ input: Any, _ extra: [String: Any] = [:]) throws -> String {
        var b: [String: Any] = ["model": try SharedModel.engine().modelName, "input": input]
        b.merge(extra) { _, x in x }
        return jsonString(b)
    }

    static func post(_ s: RunningServer, _ path: String, _ json: String) async throws -> RawResponse {
        try await offPool { try s.client().postJSON(path, json) }
    }

    static func get(_ s: RunningServer, _ path: String, method: String = "GET") async throws -> RawResponse {
        try await offPool { try s.client().request(method, path) }
    }

    static func outputText(_ r: [String: Any]) -> String? {
        let item = (r["output"] as? [[String: Any]])?.first
        return (item?["content"] as? [[String: Any]])?.first?["text"] as? String
    }

    /// A GET event stream read until its terminal event, or until `until` holds.
    static func readStream(
        _ s: RunningServer, _ path: String, until: @escaping @Sendable (SSEReader) -> Bool = { _ in false }
    ) async throws -> [[String: Any]] {
        let text = try await offPool { () -> String in
            let c = try s.client()
            guard c.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n") else {
                throw ClientError(description: "send failed")
            }
            _ = try c.readHead()
            var reader = SSEReader()
            try c.readEvents(into: &reader) { r in
                until(r)
                    || r.events.contains {
                        ["response.completed", "response.incomplete", "response.failed", "response.cancelled"].contains(
                            $0.name)
                    }
            }
            c.close()
            return reader.text
        }
        return SSEReader(text: text).events.map { jsonObject($0.data) }
    }

    static func deltas(_ events: [[String: Any]]) -> String {
        events.filter { $0["type"] as? String == "response.output_text.delta" }.compactMap { $0["delta"] as? String }
            .joined()
    }

    @Test func createAnswersTheGreedyReferenceWithUsage() async throws {
        try await RunningServer.with { s in
            let ref = try GreedyCase.named("fact_question")
            let r = try await Self.post(
                s, "/v1/responses",
                try Self.body(ref.messages[0].content, ["temperature": 0, "max_output_tokens": 48]))
            #expect(r.status == 200)
            let json = try #require(r.json)
            #expect((json["id"] as? String)?.hasPrefix("resp_") == true)
            #expect(json["object"] as? String == "response")
            #expect(json["status"] as? String == "completed")
            #expect(json["completed_at"] as? Int != nil)
            #expect(Self.outputText(json) == ref.generatedText)
            let usage = try #require(json["usage"] as? [String: Any])
            #expect(usage["input_tokens"] as? Int == ref.promptIDs.count)
            #expect(usage["output_tokens"] as? Int == ref.generatedIDs.count)
            #expect(usage["total_tokens"] as? Int == ref.promptIDs.count + ref.generatedIDs.count)
            #expect((usage["output_tokens_details"] as? [String: Any])?["reasoning_tokens"] as? Int == 0)
            #expect(json["max_output_tokens"] as? Int == 48)
            #expect(json["temperature"] as? Double == 0)
            #expect((json["reasoning"] as? [String: Any]).map { Set($0.keys) } == ["effort", "summary"])
            #expect(json["error"] is NSNull && json["incomplete_details"] is NSNull)
            // Stored by default: retrieve gives the same object.
            let id = try #require(json["id"] as? String)
            let got = try await Self.get(s, "/v1/responses/\(id)")
            #expect(got.status == 200)
            #expect(Self.outputText(got.json ?? [:]) == ref.generatedText)
            #expect(got.json?["usage"] as? [String: Any] != nil)
        }
    }

    @Test func maxOutputTokensEndsIncomplete() async throws {
        try await RunningServer.with { s in
            let r = try await Self.post(
                s, "/v1/responses", try Self.body("Write a long story.", ["temperature": 0, "max_output_tokens": 3]))
            let json = try #require(r.json)
            #expect(json["status"] as? String == "incomplete")
            #expect((json["incomplete_details"] as? [String: Any])?["reason"] as? String == "max_output_tokens")
            #expect((json["usage"] as? [String: Any])?["output_tokens"] as? Int == 3)
        }
    }

    @Test func streamHasOpenAIsEventSequence() async throws {
        try await RunningServer.with { s in
            let ref = try GreedyCase.named("list_request")
            let body = try Self.body(
                ref.messages[0].content, ["temperature": 0, "max_output_tokens": 48, "stream": true])
            let text = try await offPool { () -> String in
                let c = try s.client()
                let (status, _) = try c.startStream("/v1/responses", body)
                guard status == 200 else { throw ClientError(description: "status \(status)") }
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.name == "response.completed" } }
                return reader.text
            }
            let events = SSEReader(text: text).events
            #expect(events.allSatisfy { $0.name == jsonObject($0.data)["type"] as? String })
            let names = events.map(\.name).filter { $0 != "response.output_text.delta" }
            #expect(
                names == [
                    "response.created", "response.in_progress", "response.output_item.added",
                    "response.content_part.added", "response.output_text.done", "response.content_part.done",
                    "response.output_item.done", "response.completed",
                ])
            let objects = events.map { jsonObject($0.data) }
            #expect(objects.map { $0["sequence_number"] as? Int } == Array(0..<events.count).map { Optional($0) })
            #expect(Self.deltas(objects) == ref.generatedText)
            #expect(objects.filter { $0["type"] as? String == "response.output_text.delta" }.count >= 2)
            let added = try #require(objects[2]["item"] as? [String: Any])
            #expect((added["content"] as? [Any])?.isEmpty == true)
            let final = try #require(objects.last?["response"] as? [String: Any])
            #expect(Self.outputText(final) == ref.generatedText)
            #expect((objects[0]["response"] as? [String: Any])?["status"] as? String == "in_progress")
            #expect(objects[1]["output_index"] == nil)
            #expect((objects[1]["response"] as? [String: Any])?["output"] as? [Any] != nil)
            #expect(objects[4]["item_id"] as? String == added["id"] as? String)
        }
    }

    @Test func storedResponsesPageInputItemsAndDelete() async throws {
        try await RunningServer.with { s in
            let input: [[String: Any]] = [
                ["role": "developer", "content": "Answer briefly."],
                ["role": "user", "content": [["type": "input_text", "text": "Hi."]]],
                ["role": "assistant", "content": "Hello!"],
                ["role": "user", "content": "Name a colour."],
            ]
            let r = try await Self.post(s, "/v1/responses", try Self.body(input, ["max_output_tokens": 2]))
            let id = try #require(r.json?["id"] as? String)
            // Newest first by default, two at a time.
            let first = try #require(try await Self.get(s, "/v1/responses/\(id)/input_items?limit=3").json)
            let firstData = try #require(first["data"] as? [[String: Any]])
            #expect(firstData.map { $0["role"] as? String } == ["user", "assistant", "user"])
            #expect(first["has_more"] as? Bool == true)
            let last = try #require(first["last_id"] as? String)
            let second = try #require(
                try await Self.get(s, "/v1/responses/\(id)/input_items?limit=3&after=\(last)").json)
            #expect((second["data"] as? [[String: Any]])?.map { $0["role"] as? String } == ["developer"])
            #expect(second["has_more"] as? Bool == false)
            let asc = try #require(try await Self.get(s, "/v1/responses/\(id)/input_items?order=asc").json)
            let parts = (asc["data"] as? [[String: Any]])?.compactMap {
                (($0["content"] as? [[String: Any]])?.first?["type"] as? String)
            }
            #expect(parts == ["input_text", "input_text", "output_text", "input_text"])
            #expect(try await Self.get(s, "/v1/responses/\(id)", method: "DELETE").status == 200)
            let gone = try await Self.get(s, "/v1/responses/\(id)")
            #expect(WireError(gone).status == 404 && WireError(gone).code == "response_not_found")
            #expect(try await Self.get(s, "/v1/responses/\(id)/input_items").status == 404)
            // Not stored: never retrievable.
            let unstored = try await Self.post(
                s, "/v1/responses", try Self.body("Hi", ["max_output_tokens": 1, "store": false]))
            let uid = try #require(unstored.json?["id"] as? String)
            #expect(try await Self.get(s, "/v1/responses/\(uid)").status == 404)
        }
    }

    @Test func aChainCarriesHistoryNotInstructionsAndReusesTheCache() async throws {
        try await RunningServer.with { s in
            let engine = try SharedModel.engine()
            var previous: String?
            var messages: [ChatMessage] = []
            var cached: [Int] = []
            for (i, turn) in ["My name is Ada.", "What is my name?", "Say it again."].enumerated() {
                var extra: [String: Any] = ["temperature": 0, "max_output_tokens": 12]
                if let previous { extra["previous_response_id"] = previous }
                if i == 0 { extra["instructions"] = "Be brief." }
                let r = try await Self.post(s, "/v1/responses", try Self.body(turn, extra))
                let json = try #require(r.json, "turn \(i): \(r.text)")
                messages.append(ChatMessage(role: .user, content: turn))
                // Instructions of earlier turns are not carried over.
                let expected = try engine.prepare(
                    .conversation(instructions: i == 0 ? "Be brief." : nil, messages: messages))
                let usage = try #require(json["usage"] as? [String: Any])
                #expect(usage["input_tokens"] as? Int == expected.tokenCount, "turn \(i)")
                cached.append((usage["input_tokens_details"] as? [String: Any])?["cached_tokens"] as? Int ?? -1)
                messages.append(ChatMessage(role: .assistant, content: Self.outputText(json) ?? ""))
                #expect(json["previous_response_id"] as? String == previous)
                previous = json["id"] as? String
            }
            // Turn 2 starts without the instructions, so only turn 3 continues a cache fully.
            #expect(cached[0] == 0)
            #expect(cached[2] > 0, "cached tokens \(cached)")
            // One cache, moved along the chain to its newest response; deleting that lets it go.
            let caches = s.app.sessions.environment.caches
            let last = try #require(previous)
            #expect(caches.hasCache("response:\(last)"))
            #expect(caches.usedBytes > 0)
            #expect(try await Self.get(s, "/v1/responses/\(last)", method: "DELETE").status == 200)
            #expect(!caches.hasCache("response:\(last)") && caches.usedBytes == 0)
        }
    }

    @Test func truncationAutoDropsTheOldestItemsAndDisabledRefuses() async throws {
        try await RunningServer.with(configure: { $0.maxTokensLimit = 8192 }) { s in
            let engine = try SharedModel.engine()
            let texts = (1...3).map { i in "Item \(i): " + String(repeating: "word ", count: 60) }
            let items = texts.map { ["role": "user", "content": $0] }
            let all = try engine.prepare(
                .conversation(instructions: nil, messages: texts.map { ChatMessage(role: .user, content: $0) }))
            let lastTwo = try engine.prepare(
                .conversation(
                    instructions: nil, messages: texts.dropFirst().map { ChatMessage(role: .user, content: $0) }))
            // Room for the prompt: the context less the output budget, between the two sizes.
            let budget = 8192 - (all.tokenCount + lastTwo.tokenCount) / 2
            let refused = try await Self.post(
                s, "/v1/responses", try Self.body(items, ["max_output_tokens": budget]))
            let e = WireError(refused)
            #expect(e.status == 400 && e.param == "input" && e.message.contains("\(all.tokenCount)"), "\(e)")
            // In the background, so the long budget is cut short once the prompt has been read.
            let r = try await Self.post(
                s, "/v1/responses",
                try Self.body(items, ["max_output_tokens": budget, "truncation": "auto", "background": true]))
            let id = try #require(r.json?["id"] as? String, "\(r.text)")
            #expect(r.json?["truncation"] as? String == "auto")
            #expect(await eventually(timeout: .seconds(30)) { s.app.archive.live.run(id)?.record.started ?? true })
            let cancelled = try await offPool { try s.client().postJSON("/v1/responses/\(id)/cancel", "") }
            let usage = try #require(cancelled.json?["usage"] as? [String: Any], "\(cancelled.text)")
            #expect(usage["input_tokens"] as? Int == lastTwo.tokenCount)
        }
    }

    @Test func refusalsNameTheirField() async throws {
        try await RunningServer.with { s in
            let cases: [([String: Any], Int, String, String)] = [
                (["temprature": 0], 400, "unknown_parameter", "temprature"),
                (["tools": [["type": "web_search"]]], 400, "unsupported_parameter", "tools[0].type"),
                (["reasoning": ["effort": "high"]], 400, "unsupported_parameter", "reasoning"),
                (["include": ["reasoning.encrypted_content"]], 400, "unsupported_parameter", "include"),
                (["top_logprobs": 21], 400, "invalid_value", "top_logprobs"),
                (
                    ["text": ["format": ["type": "json_object", "bogus": 1]]], 400, "unknown_parameter",
                    "text.format.bogus"
                ),
                (["background": true, "store": false], 400, "invalid_value", "background"),
                (["previous_response_id": "resp_nope"], 404, "response_not_found", "previous_response_id"),
                (["truncation": "sometimes"], 400, "invalid_value", "truncation"),
                (["metadata": ["k": 1]], 400, "invalid_type", "metadata.k"),
                // OpenAI's Responses API has no penalties (chat and completions do): unknown here.
                (["frequency_penalty": 0.5], 400, "unknown_parameter", "frequency_penalty"),
                (["presence_penalty": 0.5], 400, "unknown_parameter", "presence_penalty"),
            ]
            for (extra, status, code, param) in cases {
                let r = try await Self.post(s, "/v1/responses", try Self.body("Hi", extra))
                let e = WireError(r)
                #expect(e.status == status && e.code == code && e.param == param, "\(extra): \(e)")
            }
            // Neutral values of refused fields are accepted.
            let neutral = try await Self.post(
                s, "/v1/responses",
                try Self.body(
                    "Hi",
                    [
                        "tools": [], "tool_choice": "none", "include": [], "parallel_tool_calls": true,
                        "text": ["format": ["type": "text"]], "max_output_tokens": 1,
                    ]))
            #expect(neutral.status == 200, "\(neutral.text)")
            #expect((neutral.json?["text"] as? [String: Any])?["format"] as? [String: String] == ["type": "text"])
            // A structured format is echoed as given, on the answer and on the stored response.
            let schema: [String: Any] = ["type": "object", "properties": ["n": ["type": "integer"]]]
            let structured = try await Self.post(
                s, "/v1/responses",
                try Self.body(
                    "Hi",
                    [
                        "max_output_tokens": 1,
                        "text": ["format": ["type": "json_schema", "name": "count", "strict": true, "schema": schema]],
                    ]))
            let sid = try #require(structured.json?["id"] as? String)
            let stored = try await offPool { try s.client().request("GET", "/v1/responses/\(sid)") }
            for echo in [structured.json, stored.json] {
                let format = try #require((echo?["text"] as? [String: Any])?["format"] as? [String: Any])
                #expect(format["type"] as? String == "json_schema" && format["name"] as? String == "count")
                #expect(format["strict"] as? Bool == true)
                #expect(NSDictionary(dictionary: format["schema"] as? [String: Any] ?? [:]).isEqual(to: schema))
            }
            // Overflow with truncation disabled names both counts.
            let long = String(repeating: "word ", count: 9000)
            let overflow = try await Self.post(s, "/v1/responses", try Self.body(long, ["max_output_tokens": 10]))
            #expect(WireError(overflow).status == 400 && WireError(overflow).param == "input")
            #expect(WireError(overflow).message.contains("8192"))
            // Cancelling a foreground response is the connection's business.
            let fg = try await Self.post(s, "/v1/responses", try Self.body("Hi", ["max_output_tokens": 1]))
            let id = try #require(fg.json?["id"] as? String)
            let cancel = try await offPool { try s.client().postJSON("/v1/responses/\(id)/cancel", "") }
            #expect(WireError(cancel).status == 400)
        }
    }

    @Test func backgroundRunsOnCancelStopsItAndResumeHasNoGapOrDuplicate() async throws {
        try await RunningServer.with { s in
            let body = try Self.body(
                "Count from one to a thousand.",
                ["background": true, "ignore_eos": true, "max_output_tokens": 4000, "temperature": 0])
            let r = try await Self.post(s, "/v1/responses", body)
            let json = try #require(r.json)
            #expect(json["status"] as? String == "queued")
            let id = try #require(json["id"] as? String)
            // Read the stream from the start until some deltas arrived, then leave.
            let head = try await Self.readStream(s, "/v1/responses/\(id)?stream=true") { r in
                r.events.filter { $0.name == "response.output_text.delta" }.count >= 5
            }
            let lastSeen = try #require(head.last?["sequence_number"] as? Int)
            // The response goes on without the reader; resume after the last event seen.
            try await Task.sleep(for: .milliseconds(200))
            let tail = try await Self.readStream(s, "/v1/responses/\(id)?stream=true&starting_after=\(lastSeen)") { r in
                r.events.filter { $0.name == "response.output_text.delta" }.count >= 3
            }
            #expect(tail.first?["sequence_number"] as? Int == lastSeen + 1)
            let numbers = (head + tail).compactMap { $0["sequence_number"] as? Int }
            #expect(numbers == Array(0..<numbers.count))
            let seenText = Self.deltas(head + tail)
            // Cancel: answers once stopped, text is the last snapshot, idempotent.
            let cancelled = try await offPool { try s.client().postJSON("/v1/responses/\(id)/cancel", "") }
            let c = try #require(cancelled.json)
            #expect(c["status"] as? String == "cancelled")
            let finalText = try #require(Self.outputText(c))
            #expect(finalText.hasPrefix(seenText))
            let again = try await offPool { try s.client().postJSON("/v1/responses/\(id)/cancel", "") }
            #expect(again.json?["status"] as? String == "cancelled" && Self.outputText(again.json ?? [:]) == finalText)
            #expect(Self.outputText(try await Self.get(s, "/v1/responses/\(id)").json ?? [:]) == finalText)
            // The whole stream, replayed after the end: deltas add up to the final text.
            let all = try await Self.readStream(s, "/v1/responses/\(id)?stream=true")
            #expect(Self.deltas(all) == finalText)
            #expect(all.last?["type"] as? String == "response.cancelled")
            #expect(s.app.archive.live.count == 0)
        }
    }

    /// `background` with `stream`, as OpenAI answers it: the response's events from its start; a
    /// client that drops that stream leaves the response running (the server owns it), and its
    /// events can be read again by id.
    @Test func backgroundWithStreamStreamsFromTheStartAndOutlivesItsStream() async throws {
        try await RunningServer.with { s in
            let body = try Self.body(
                "Count from one to a thousand.",
                ["background": true, "stream": true, "ignore_eos": true, "max_output_tokens": 40, "temperature": 0])
            let text = try await offPool { () -> String in
                let c = try s.client()
                let (status, _) = try c.startStream("/v1/responses", body)
                guard status == 200 else { throw ClientError(description: "status \(status)") }
                var reader = SSEReader()
                try c.readEvents(into: &reader) {
                    $0.events.filter { $0.name == "response.output_text.delta" }.count >= 2
                }
                c.close()
                return reader.text
            }
            let events = SSEReader(text: text).events.map { jsonObject($0.data) }
            let created = try #require(events.first)
            #expect(created["type"] as? String == "response.created" && created["sequence_number"] as? Int == 0)
            let response = try #require(created["response"] as? [String: Any])
            #expect(response["background"] as? Bool == true)
            let id = try #require(response["id"] as? String)
            // The dropped stream did not stop it: it runs to its budget.
            #expect(await eventually(timeout: .seconds(60)) { s.app.archive.live.count == 0 })
            let stored = try #require(try await Self.get(s, "/v1/responses/\(id)").json)
            #expect(stored["status"] as? String == "incomplete", "\(stored)")
            #expect(s.cancelledGenerations() == 0)
            let all = try await Self.readStream(s, "/v1/responses/\(id)?stream=true")
            #expect(Self.deltas(all) == Self.outputText(stored))
            #expect(all.last?["type"] as? String == "response.incomplete")
        }
    }

    @Test func shutdownFailsRunningBackgroundResponsesWithoutRerunningThem() async throws {
        try await RunningServer.with { s in
            let body = try Self.body(
                "Count from one to a thousand.", ["background": true, "ignore_eos": true, "max_output_tokens": 4000])
            let id = try #require(try await Self.post(s, "/v1/responses", body).json?["id"] as? String)
            #expect(await eventually(timeout: .seconds(30)) { s.app.archive.live.run(id)?.record.started ?? true })
            await s.app.stopBackgroundResponses()
            #expect(s.app.archive.live.count == 0)
            let stored = try #require(try await Self.get(s, "/v1/responses/\(id)").json)
            #expect(stored["status"] as? String == "failed")
            #expect((stored["error"] as? [String: Any])?["code"] as? String == "server_stopped")
        }
    }

    @Test func aForegroundClientThatLeavesCancelsItsResponse() async throws {
        try await RunningServer.with { s in
            let body = try Self.body(
                "Count from one to a thousand.",
                ["stream": true, "ignore_eos": true, "max_output_tokens": 4000, "temperature": 0])
            let id = try await offPool { () -> String in
                let c = try s.client()
                _ = try c.startStream("/v1/responses", body)
                var reader = SSEReader()
                try c.readEvents(into: &reader) {
                    $0.events.filter { $0.name == "response.output_text.delta" }.count >= 3
                }
                c.close()
                let created = jsonObject(reader.events[0].data)["response"] as? [String: Any]
                return created?["id"] as? String ?? ""
            }
            let cancelled = try #require(await s.cancelledGeneration(timeout: .seconds(10)))
            #expect(cancelled.stepsAfterCancel <= 1)
            #expect(await eventually(timeout: .seconds(5)) { s.app.archive.live.count == 0 })
            let stored = try await Self.get(s, "/v1/responses/\(id)")
            #expect(stored.json?["status"] as? String == "cancelled")
        }
    }

    @Test func anotherKeySeesNothing() async throws {
        try await RunningServer.with(configure: { $0.apiKeys = "key-a-0123456789abcdef,key-b-0123456789abcdef" }) { s in
            let created = try await offPool {
                try s.client().postJSON(
                    "/v1/responses", try Self.body("Hi", ["max_output_tokens": 1]),
                    headers: [("Authorization", "Bearer key-a-0123456789abcdef")])
            }
            let id = try #require(created.json?["id"] as? String)
            for (method, path) in [
                ("GET", "/v1/responses/\(id)"), ("GET", "/v1/responses/\(id)/input_items"),
                ("DELETE", "/v1/responses/\(id)"),
            ] {
                let b = try await offPool {
                    try s.client().request(method, path, headers: [("Authorization", "Bearer key-b-0123456789abcdef")])
                }
                #expect(b.status == 404, "\(method) \(path)")
                let a = try await offPool {
                    try s.client().request(
                        "GET", "/v1/responses/\(id)", headers: [("Authorization", "Bearer key-a-0123456789abcdef")])
                }
                #expect(a.status == 200)
            }
            let chained = try await offPool {
                try s.client().postJSON(
                    "/v1/responses", try Self.body("Hi", ["max_output_tokens": 1, "previous_response_id": id]),
                    headers: [("Authorization", "Bearer key-b-0123456789abcdef")])
            }
            #expect(WireError(chained).status == 404 && WireError(chained).param == "previous_response_id")
        }
    }
}
