import Engine
import Foundation
import StructuredOutput
import TestSupport
import Testing

@testable import InferdServer

/// Tool calling over a real socket with the default model (SmolLM2, whose template knows no
/// tools: the generic format). What the server guarantees whatever the model writes: `required`
/// and a named function make calls whose arguments match the schema, `none` never calls,
/// `parallel_tool_calls: false` makes one call, a stream's fragments add up to the plain answer,
/// a call cut off by `max_tokens` is not a call, and a tool turn's result reaches the model.
@Suite(.serialized) struct ToolCallingEndToEndTests {
    static var weatherSchema: [String: Any] {
        [
            "type": "object",
            "properties": [
                "city": ["type": "string", "maxLength": 20],
                "unit": ["type": "string", "enum": ["celsius", "fahrenheit"]],
            ],
            "required": ["city", "unit"], "additionalProperties": false,
        ]
    }
    static var tools: [[String: Any]] {
        [
            [
                "type": "function",
                "function": [
                    "name": "get_weather", "description": "The weather in a city.", "parameters": weatherSchema,
                    "strict": true,
                ] as [String: Any],
            ],
            [
                "type": "function",
                "function": [
                    "name": "get_time",
                    "parameters": [
                        "type": "object", "properties": ["zone": ["enum": ["UTC", "CET"]]], "required": ["zone"],
                    ] as [String: Any],
                ] as [String: Any],
            ],
        ]
    }

    func body(_ extra: [String: Any]) throws -> String {
        var body: [String: Any] = [
            "model": try SharedModel.engine().modelName,
            "messages": [["role": "user", "content": "What is the weather in Paris?"]], "tools": Self.tools,
            "temperature": 0, "max_tokens": 120,
        ]
        body.merge(extra) { _, b in b }
        return jsonString(body)
    }

    func chat(_ s: RunningServer, _ extra: [String: Any]) async throws -> RawResponse {
        let json = try body(extra)
        return try await offPool { try s.client(timeout: 120).postJSON("/v1/chat/completions", json) }
    }

    func message(_ r: RawResponse) -> (message: [String: Any], finish: String?) {
        let choice = (r.json?["choices"] as? [[String: Any]])?.first ?? [:]
        return (choice["message"] as? [String: Any] ?? [:], choice["finish_reason"] as? String)
    }

    /// The calls' (name, arguments); each call's arguments checked as JSON against its schema.
    func calls(_ message: [String: Any]) throws -> [(name: String, arguments: String)] {
        let list = message["tool_calls"] as? [[String: Any]] ?? []
        return try list.map { call in
            #expect((call["id"] as? String)?.hasPrefix("call_") == true && call["type"] as? String == "function")
            let f = try #require(call["function"] as? [String: Any])
            let name = try #require(f["name"] as? String)
            let arguments = try #require(f["arguments"] as? String)
            let value = try #require(try? JSONSerialization.jsonObject(with: Data(arguments.utf8)) as? [String: Any])
            if name == "get_weather" {
                #expect(Set(value.keys) == ["city", "unit"], "\(arguments)")
                #expect(["celsius", "fahrenheit"].contains(value["unit"] as? String ?? ""), "\(arguments)")
                #expect(((value["city"] as? String)?.count ?? 99) <= 20, "\(arguments)")
            } else {
                #expect(name == "get_time" && ["UTC", "CET"].contains(value["zone"] as? String ?? ""), "\(arguments)")
            }
            return (name, arguments)
        }
    }

    @Test func requiredAndNamedChoicesForceValidCalls() async throws {
        try await RunningServer.with { s in
            let required = try await chat(s, ["tool_choice": "required"])
            #expect(required.status == 200, "\(required.text)")
            let (m, finish) = message(required)
            #expect(finish == "tool_calls")
            #expect(!(try calls(m)).isEmpty)
            #expect(m["content"] is NSNull, "\(required.text)")
            for name in ["get_weather", "get_time"] {
                let r = try await chat(s, ["tool_choice": ["type": "function", "function": ["name": name]]])
                #expect(try calls(message(r).message).map(\.name) == [name], "\(r.text)")
            }
            let single = try await chat(s, ["tool_choice": "required", "parallel_tool_calls": false])
            #expect(try calls(message(single).message).count == 1, "\(single.text)")
        }
    }

    @Test func noneNeverCallsAndACutOffCallIsNotACall() async throws {
        try await RunningServer.with { s in
            let none = try await chat(s, ["tool_choice": "none", "max_tokens": 24])
            let (m, _) = message(none)
            #expect(m["tool_calls"] == nil && m["content"] is String, "\(none.text)")
            #expect(!((m["content"] as? String) ?? "").hasPrefix("{"), "\(none.text)")
            // Forced to call but stopped after 6 tokens: inside the call's markup.
            let cut = try await chat(s, ["tool_choice": "required", "max_tokens": 6])
            let (c, finish) = message(cut)
            #expect(finish == "length" && c["tool_calls"] == nil, "\(cut.text)")
            #expect(!((c["content"] as? String) ?? "").contains("tool_calls"), "\(cut.text)")
        }
    }

    @Test func aStreamAddsUpToThePlainAnswer() async throws {
        try await RunningServer.with { s in
            let plain = try calls(message(try await chat(s, ["tool_choice": "required"])).message)
            let json = try body(["tool_choice": "required", "stream": true])
            let reader = try await offPool { () -> SSEReader in
                let c = try s.client(timeout: 120)
                _ = try c.startStream("/v1/chat/completions", json)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.data == "[DONE]" } }
                return reader
            }
            var names: [Int: String] = [:]
            var ids: [Int: String] = [:]
            var arguments: [Int: String] = [:]
            var content = ""
            var finish: [String] = []
            for event in reader.events.dropLast() {
                let choice = (jsonObject(event.data)["choices"] as? [[String: Any]])?.first ?? [:]
                if let f = choice["finish_reason"] as? String { finish.append(f) }
                let delta = choice["delta"] as? [String: Any] ?? [:]
                content += delta["content"] as? String ?? ""
                for call in delta["tool_calls"] as? [[String: Any]] ?? [] {
                    let index = try #require(call["index"] as? Int)
                    let f = call["function"] as? [String: Any] ?? [:]
                    if let id = call["id"] as? String {
                        #expect(ids[index] == nil, "a call's id comes once")
                        ids[index] = id
                    }
                    if let name = f["name"] as? String {
                        #expect(names[index] == nil, "a call's name comes once")
                        names[index] = name
                    }
                    arguments[index, default: ""] += f["arguments"] as? String ?? ""
                }
            }
            #expect(finish == ["tool_calls"] && content.isEmpty, "\(reader.text)")
            let streamed = names.keys.sorted().map { (names[$0]!, arguments[$0] ?? "") }
            #expect(
                streamed.map(\.0) == plain.map(\.name) && streamed.map(\.1) == plain.map(\.arguments),
                "\(streamed) vs \(plain): \(reader.text)")
            #expect(ids.count == plain.count && ids.values.allSatisfy { $0.hasPrefix("call_") })
        }
    }

    @Test func aToolResultReachesTheModel() async throws {
        try await RunningServer.with { s in
            let first = try await chat(s, ["tool_choice": ["type": "function", "function": ["name": "get_weather"]]])
            let call = try #require((message(first).message["tool_calls"] as? [[String: Any]])?.first)
            let id = try #require(call["id"] as? String)
            let messages: [[String: Any]] = [
                ["role": "user", "content": "What is the weather in Paris?"],
                ["role": "assistant", "content": NSNull(), "tool_calls": [call]],
                ["role": "tool", "tool_call_id": id, "content": "It is 18 degrees and sunny."],
            ]
            let final = try await chat(s, ["messages": messages, "tool_choice": "none", "max_tokens": 30])
            #expect(final.status == 200, "\(final.text)")
            let usage = try #require(final.json?["usage"] as? [String: Any])
            // The prompt holds the call and the result: longer than the first request's.
            let firstPrompt = try #require((first.json?["usage"] as? [String: Any])?["prompt_tokens"] as? Int)
            #expect((usage["prompt_tokens"] as? Int ?? 0) > firstPrompt + 20, "\(final.text)")
            #expect(message(final).message["tool_calls"] == nil)
            // Without tools, a history with tool turns still renders.
            let noTools = try await chat(s, ["messages": messages, "tools": [], "max_tokens": 5])
            #expect(noTools.status == 200, "\(noTools.text)")
        }
    }

    @Test func aStrictToolWhoseSchemaCannotBeEnforcedIs400NamingIt() async throws {
        try await RunningServer.with { s in
            let tool: [String: Any] = [
                "type": "function",
                "function": [
                    "name": "f", "strict": true,
                    "parameters": ["type": "object", "dependentSchemas": ["a": [:] as [String: Any]]],
                ] as [String: Any],
            ]
            let r = try await chat(s, ["tools": [Self.tools[0], tool]])
            #expect(r.status == 400 && r.errorParam == "tools[1].function.parameters", "\(r.text)")
            // Not strict: accepted, the arguments any JSON object.
            var loose = tool
            loose["function"] = ["name": "f", "parameters": ["dependentSchemas": ["a": [:] as [String: Any]]]]
            let ok = try await chat(s, ["tools": [loose], "tool_choice": "required", "max_tokens": 40])
            #expect(ok.status == 200, "\(ok.text)")
        }
    }
}
