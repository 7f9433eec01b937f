import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// A thinking model's answers played through the chat route (a scripted backend reporting
/// Qwen 3's real template, so the format is `hermes` and answers may reason): the reasoning goes
/// to `reasoning_content`, calls to `tool_calls` (also one written inside the reasoning, and
/// several in one answer), and a stream's `reasoning_content`, `content` and argument fragments
/// add up to the plain answer's. The script, not a grammar, decides the text here; the grammars
/// are tested with real models (ToolCallingEndToEndTests, ToolCallingTinyModelTests).
@Suite struct ToolCallingScriptedEndToEndTests {
    static func qwen3Template() throws -> String {
        let url = TestPaths.packageRoot.appendingPathComponent("Tests/EngineTests/Fixtures/templates/qwen3.jinja")
        return try String(contentsOf: url, encoding: .utf8)
    }

    static let tools: String = #"""
        [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}}]
        """#

    func serve(_ answer: String, _ body: (RunningServer) async throws -> Void) async throws {
        let backend = ScriptedBackend(chatTemplateSource: try Self.qwen3Template()) { _ in
            answer.indices.map { .text(String(answer[...$0])) } + [.finish(.stop)]
        }
        try await RunningServer.with(state: .ready(backend), body)
    }

    func request(_ extra: String = #", "tools": \#(tools)"#, stream: Bool = false) -> String {
        #"{"model": "scripted", "messages": [{"role": "user", "content": "Weather?"}], "stream": \#(stream)\#(extra)}"#
    }

    func message(_ s: RunningServer, _ body: String) async throws -> (message: [String: Any], finish: String?) {
        let r = try await offPool { try s.client(timeout: 30).postJSON("/v1/chat/completions", body) }
        #expect(r.status == 200, "\(r.text)")
        let choice = (r.json?["choices"] as? [[String: Any]])?.first ?? [:]
        return (choice["message"] as? [String: Any] ?? [:], choice["finish_reason"] as? String)
    }

    func calls(_ m: [String: Any]) -> [String] {
        (m["tool_calls"] as? [[String: Any]] ?? []).map {
            let f = $0["function"] as? [String: Any] ?? [:]
            return "\(f["name"] as? String ?? "?") \(f["arguments"] as? String ?? "?")"
        }
    }

    /// The stream's reasoning, content and calls ("name arguments" per index), and its finish.
    func streamed(_ s: RunningServer, _ body: String) async throws -> (
        reasoning: String, content: String, calls: [String], ids: Set<String>, finish: String?
    ) {
        let reader = try await offPool { () -> SSEReader in
            let c = try s.client(timeout: 30)
            _ = try c.startStream("/v1/chat/completions", body)
            var reader = SSEReader()
            try c.readEvents(into: &reader) { $0.events.contains { $0.data == "[DONE]" } }
            return reader
        }
        var reasoning = ""
        var content = ""
        var names: [Int: String] = [:]
        var arguments: [Int: String] = [:]
        var ids = Set<String>()
        var finish: String?
        for event in reader.events.dropLast() {
            let choice = (jsonObject(event.data)["choices"] as? [[String: Any]])?.first ?? [:]
            finish = choice["finish_reason"] as? String ?? finish
            let delta = choice["delta"] as? [String: Any] ?? [:]
            reasoning += delta["reasoning_content"] as? String ?? ""
            content += delta["content"] as? String ?? ""
            for call in delta["tool_calls"] as? [[String: Any]] ?? [] {
                let i = call["index"] as? Int ?? -1
                if let id = call["id"] as? String { ids.insert(id) }
                let f = call["function"] as? [String: Any] ?? [:]
                if let name = f["name"] as? String { names[i] = name }
                arguments[i, default: ""] += f["arguments"] as? String ?? ""
            }
        }
        let calls = names.keys.sorted().map { "\(names[$0]!) \(arguments[$0] ?? "")" }
        return (reasoning, content, calls, ids, finish)
    }

    @Test func reasoningAndACallAreApartAndTheStreamAddsUp() async throws {
        let answer =
            "<think>The user wants the weather.</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris \\\"15e\\\" \u{e9}\"}}\n</tool_call>"
        try await serve(answer) { s in
            let (m, finish) = try await message(s, request())
            #expect(finish == "tool_calls")
            #expect(m["reasoning_content"] as? String == "The user wants the weather.")
            #expect(m["content"] is NSNull)
            #expect(calls(m) == [#"get_weather {"city": "Paris \"15e\" é"}"#])
            let stream = try await streamed(s, request(stream: true))
            #expect(stream.reasoning == "The user wants the weather." && stream.content.isEmpty)
            #expect(stream.calls == calls(m) && stream.ids.count == 1 && stream.finish == "tool_calls")
        }
    }

    @Test func aCallInsideTheReasoningAndSeveralCallsAreCalls() async throws {
        let answer =
            "<think>Let me look. <tool_call>{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}</tool_call></think>Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>"
        try await serve(answer) { s in
            let (m, finish) = try await message(s, request())
            #expect(finish == "tool_calls")
            #expect(m["reasoning_content"] as? String == "Let me look.")
            #expect(m["content"] as? String == "Checking.")
            #expect(
                calls(m) == [
                    #"get_time {"zone": "UTC"}"#, #"get_weather {"city": "Oslo"}"#, #"get_weather {"city": "Rome"}"#,
                ])
            let ids = (m["tool_calls"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            #expect(Set(ids).count == 3)
            let stream = try await streamed(s, request(stream: true))
            #expect(stream.calls == calls(m) && stream.ids.count == 3)
            #expect(stream.reasoning == "Let me look." && stream.content == "Checking.")
        }
    }

    @Test func withoutToolsTheReasoningIsStillApartUnlessThinkingIsOff() async throws {
        try await serve("<think>Easy.</think>\n\nParis. <tool_call>{}</tool_call>") { s in
            let (m, finish) = try await message(s, request(""))
            #expect(finish == "stop")
            #expect(m["reasoning_content"] as? String == "Easy.")
            // No tools: nothing is read as a call.
            #expect(m["content"] as? String == "Paris. <tool_call>{}</tool_call>" && m["tool_calls"] == nil)
            let stream = try await streamed(s, request("", stream: true))
            #expect(stream.reasoning == "Easy." && stream.content == "Paris. <tool_call>{}</tool_call>")
            let off = try await message(s, request(#", "chat_template_kwargs": {"enable_thinking": false}"#))
            #expect(off.message["content"] as? String == "<think>Easy.</think>\n\nParis. <tool_call>{}</tool_call>")
            #expect(off.message["reasoning_content"] == nil)
        }
    }
}
