import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Function tools on the Responses API (#33) over a real socket with the default model (SmolLM2,
/// the generic call format): flat tool definitions, `function_call` output items whose arguments
/// match the schema, the stream's call events adding up to the stored arguments, a
/// `previous_response_id` chain answered with a `function_call_output`, background responses
/// ending with their calls, and refusals naming their field.
@Suite(.serialized) struct ResponsesToolsEndToEndTests {
    typealias R = ResponsesAPIEndToEndTests

    static var tools: [[String: Any]] {
        [
            [
                "type": "function", "name": "get_weather", "description": "The weather in a city.",
                "parameters": ToolCallingEndToEndTests.weatherSchema, "strict": true,
            ],
            [
                "type": "function", "name": "get_time",
                "parameters": [
                    "type": "object", "properties": ["zone": ["enum": ["UTC", "CET"]]], "required": ["zone"],
                ] as [String: Any],
            ],
        ]
    }

    static func body(_ extra: [String: Any], input: Any = "What is the weather in Paris?") throws -> String {
        var extra = extra
        if extra["tools"] == nil { extra["tools"] = tools }
        if extra["temperature"] == nil { extra["temperature"] = 0 }
        if extra["max_output_tokens"] == nil { extra["max_output_tokens"] = 120 }
        return try R.body(input, extra)
    }

    static func post(_ s: RunningServer, _ json: String) async throws -> RawResponse {
        try await offPool { try s.client(timeout: 120).postJSON("/v1/responses", json) }
    }

    /// The response's `function_call` items, each checked: ids, status, arguments valid JSON
    /// matching its tool's schema.
    static func calls(_ response: [String: Any]) throws -> [[String: Any]] {
        let items = (response["output"] as? [[String: Any]] ?? []).filter { $0["type"] as? String == "function_call" }
        for item in items {
            #expect((item["id"] as? String)?.hasPrefix("fc_") == true, "\(item)")
            #expect((item["call_id"] as? String)?.hasPrefix("call_") == true, "\(item)")
            #expect(item["status"] as? String == "completed", "\(item)")
            let arguments = try #require(item["arguments"] as? String)
            let value = try #require(try? JSONSerialization.jsonObject(with: Data(arguments.utf8)) as? [String: Any])
            switch item["name"] as? String {
            case "get_weather":
                #expect(Set(value.keys) == ["city", "unit"], "\(arguments)")
                #expect(["celsius", "fahrenheit"].contains(value["unit"] as? String ?? ""), "\(arguments)")
            case "get_time":
                #expect(["UTC", "CET"].contains(value["zone"] as? String ?? ""), "\(arguments)")
            default:
                Issue.record("unknown tool in \(item)")
            }
        }
        return items
    }

    @Test func requiredMakesFunctionCallItemsAndEchoesTheTools() async throws {
        try await RunningServer.with { s in
            let r = try await Self.post(s, try Self.body(["tool_choice": "required", "parallel_tool_calls": false]))
            let json = try #require(r.json, "\(r.text)")
            #expect(r.status == 200 && json["status"] as? String == "completed", "\(r.text)")
            let calls = try Self.calls(json)
            #expect(calls.count == 1, "\(r.text)")
            let output = json["output"] as? [[String: Any]] ?? []
            // Any text comes first, as a message item; the call is the last item.
            #expect(output.last?["type"] as? String == "function_call")
            #expect(output.dropLast().allSatisfy { $0["type"] as? String == "message" })
            #expect(json["tool_choice"] as? String == "required")
            #expect(json["parallel_tool_calls"] as? Bool == false)
            let tools = json["tools"] as? [[String: Any]] ?? []
            #expect(tools.map { $0["name"] as? String } == ["get_weather", "get_time"])
            #expect(tools.first?["strict"] as? Bool == true)
            // Stored as answered.
            let id = try #require(json["id"] as? String)
            let stored = try #require(try await R.get(s, "/v1/responses/\(id)").json)
            #expect(
                try Self.calls(stored).map { $0["arguments"] as? String } == calls.map { $0["arguments"] as? String })
            #expect(stored["tool_choice"] as? String == "required")
        }
    }

    @Test func streamedCallArgumentsAddUpToTheAnswer() async throws {
        try await RunningServer.with { s in
            let extra: [String: Any] = [
                "tool_choice": ["type": "function", "name": "get_time"], "parallel_tool_calls": false,
            ]
            let plain = try #require(try await Self.post(s, try Self.body(extra)).json)
            let plainCalls = try Self.calls(plain)
            #expect(plainCalls.map { $0["name"] as? String } == ["get_time"])
            var streamed = extra
            streamed["stream"] = true
            let body = try Self.body(streamed)
            let text = try await offPool { () -> String in
                let c = try s.client(timeout: 120)
                let (status, _) = try c.startStream("/v1/responses", body)
                guard status == 200 else { throw ClientError(description: "status \(status)") }
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.name == "response.completed" } }
                return reader.text
            }
            let events = SSEReader(text: text).events.map { jsonObject($0.data) }
            #expect(events.map { $0["sequence_number"] as? Int } == Array(0..<events.count).map { Optional($0) })
            let types = events.compactMap { $0["type"] as? String }
            let added = try #require(
                events.first {
                    $0["type"] as? String == "response.output_item.added"
                        && ($0["item"] as? [String: Any])?["type"] as? String == "function_call"
                }, "\(types)")
            let item = try #require(added["item"] as? [String: Any])
            #expect(item["arguments"] as? String == "" && item["status"] as? String == "in_progress")
            #expect(item["name"] as? String == "get_time")
            let itemID = try #require(item["id"] as? String)
            let index = try #require(added["output_index"] as? Int)
            let deltas = events.filter { $0["type"] as? String == "response.function_call_arguments.delta" }
            #expect(!deltas.isEmpty)
            #expect(deltas.allSatisfy { $0["item_id"] as? String == itemID && $0["output_index"] as? Int == index })
            let joined = deltas.compactMap { $0["delta"] as? String }.joined()
            let done = try #require(events.first { $0["type"] as? String == "response.function_call_arguments.done" })
            #expect(done["arguments"] as? String == joined && done["item_id"] as? String == itemID)
            #expect(joined == plainCalls.first?["arguments"] as? String, "\(joined) vs \(plainCalls)")
            // The order: added, the deltas, done, the item's done, then the end.
            let order = types.filter { !$0.hasSuffix(".delta") }
            #expect(order.first == "response.created" && order.last == "response.completed")
            let a = try #require(order.firstIndex(of: "response.function_call_arguments.done"))
            #expect(order[a + 1] == "response.output_item.done")
            let final = try #require(events.last?["response"] as? [String: Any])
            #expect(try Self.calls(final).map { $0["arguments"] as? String } == [joined])
            #expect(((final["output"] as? [[String: Any]])?[index]["id"]) as? String == itemID)
        }
    }

    @Test func aChainCarriesTheCallAndItsOutput() async throws {
        try await RunningServer.with { s in
            let first = try #require(
                try await Self.post(s, try Self.body(["tool_choice": "required", "parallel_tool_calls": false])).json)
            let call = try #require(try Self.calls(first).first, "\(first)")
            let callID = try #require(call["call_id"] as? String)
            let firstID = try #require(first["id"] as? String)
            let firstInput = ((first["usage"] as? [String: Any])?["input_tokens"] as? Int) ?? 0
            let result: [String: Any] = [
                "type": "function_call_output", "call_id": callID,
                "output": "{\"temperature\": 22, \"sky\": \"sunny\"}",
            ]
            let second = try await Self.post(
                s,
                try Self.body(
                    ["previous_response_id": firstID, "max_output_tokens": 24, "tool_choice": "none"], input: [result]))
            let json = try #require(second.json, "\(second.text)")
            #expect(second.status == 200, "\(second.text)")
            let secondInput = ((json["usage"] as? [String: Any])?["input_tokens"] as? Int) ?? 0
            #expect(secondInput > firstInput, "the call and its result are part of the prompt")
            #expect(try Self.calls(json).isEmpty, "tool_choice none never calls")
            // The input items list the tool's result as given.
            let secondID = try #require(json["id"] as? String)
            let items = try #require(try await R.get(s, "/v1/responses/\(secondID)/input_items").json)
            let listed = (items["data"] as? [[String: Any]])?.first
            #expect(listed?["type"] as? String == "function_call_output" && listed?["call_id"] as? String == callID)
            // An output that answers no call is refused, naming it.
            let stray = try await Self.post(
                s,
                try Self.body(
                    ["previous_response_id": firstID],
                    input: [["type": "function_call_output", "call_id": "call_nope", "output": "x"]]))
            #expect(WireError(stray).status == 400 && WireError(stray).param == "input[0].call_id", "\(stray.text)")
            // A stateless turn may carry the call and its output as input items.
            let replay = try await Self.post(
                s,
                try Self.body(
                    ["max_output_tokens": 8, "store": false],
                    input: [
                        ["role": "user", "content": "What is the weather in Paris?"],
                        [
                            "type": "function_call", "call_id": "call_1", "name": "get_weather",
                            "arguments": "{\"city\":\"Paris\",\"unit\":\"celsius\"}",
                        ],
                        [
                            "type": "function_call_output", "call_id": "call_1",
                            "output": [["type": "input_text", "text": "22 C, sunny"]],
                        ],
                    ]))
            #expect(replay.status == 200, "\(replay.text)")
        }
    }

    @Test func backgroundResponsesEndWithTheirCalls() async throws {
        try await RunningServer.with { s in
            let r = try await Self.post(
                s, try Self.body(["tool_choice": "required", "parallel_tool_calls": false, "background": true]))
            let id = try #require(r.json?["id"] as? String, "\(r.text)")
            #expect(await eventually(timeout: .seconds(60)) { s.app.archive.live.run(id) == nil })
            let stored = try #require(try await R.get(s, "/v1/responses/\(id)").json)
            #expect(stored["status"] as? String == "completed", "\(stored)")
            #expect(try Self.calls(stored).count == 1)
            // Its stream, replayed from the store, has the call's events.
            let events = try await R.readStream(s, "/v1/responses/\(id)?stream=true")
            let joined = events.filter { $0["type"] as? String == "response.function_call_arguments.delta" }
                .compactMap { $0["delta"] as? String }.joined()
            #expect(joined == (try Self.calls(stored).first?["arguments"] as? String))
        }
    }

    @Test func aCallCutOffIsNotACall() async throws {
        try await RunningServer.with { s in
            let r = try await Self.post(s, try Self.body(["tool_choice": "required", "max_output_tokens": 4]))
            let json = try #require(r.json, "\(r.text)")
            #expect(json["status"] as? String == "incomplete", "\(r.text)")
            let items = (json["output"] as? [[String: Any]] ?? []).filter { $0["type"] as? String == "function_call" }
            #expect(items.allSatisfy { $0["status"] as? String == "incomplete" }, "\(r.text)")
        }
    }

    @Test func refusalsNameTheirField() async throws {
        try await RunningServer.with { s in
            let weather = Self.tools[0]
            let cases: [([String: Any], Any, String)] = [
                (["tools": [["type": "web_search"]]], "Hi", "tools[0].type"),
                (["tools": [["type": "file_search", "vector_store_ids": ["vs_1"]]]], "Hi", "tools[0].type"),
                (["tools": [weather, ["type": "code_interpreter"]]], "Hi", "tools[1].type"),
                (["tools": [["type": "function", "parameters": [:]]]], "Hi", "tools[0].name"),
                (["tools": [weather, weather]], "Hi", "tools[1].name"),
                (["tool_choice": ["type": "function", "name": "nope"]], "Hi", "tool_choice.name"),
                (["tool_choice": "sometimes"], "Hi", "tool_choice"),
                (["tools": [], "tool_choice": "required"], "Hi", "tool_choice"),
                (["max_tool_calls": 2], "Hi", "max_tool_calls"),
                (["text": ["format": ["type": "json_object"]]], "Hi", "text.format"),
                (
                    [:], [["type": "function_call", "call_id": "call_1", "name": "get_weather"]],
                    "input[0].arguments"
                ),
                ([:], [["type": "function_call_output", "call_id": "call_1", "output": "x"]], "input[0].call_id"),
                (
                    [:], [["type": "function_call_output", "call_id": "c", "output": [["type": "input_image"]]]],
                    "input[0].output[0].type"
                ),
            ]
            for (extra, input, param) in cases {
                let r = try await Self.post(s, try Self.body(extra, input: input))
                let e = WireError(r)
                #expect(e.status == 400 && e.param == param, "\(extra) \(input): \(e)")
            }
        }
    }
}
