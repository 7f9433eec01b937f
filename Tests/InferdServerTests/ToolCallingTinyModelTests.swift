import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Random-weight models (Qwen 2 and Qwen 3 shapes, the repository's tiny fixtures) served with
/// the real Qwen 2.5 and Qwen 3 templates: the tools are rendered by the template (the `hermes`
/// format), and since the grammar decides the shape, `required` and a named function still yield
/// one well-formed call with arguments from the schema, whatever the weights say.
@Suite(.serialized) struct ToolCallingTinyModelTests {
    static func engine(_ model: String, template: String) throws -> InferenceEngine {
        let root = TestPaths.packageRoot
        let source = try String(
            contentsOf: root.appendingPathComponent("Tests/EngineTests/Fixtures/templates/\(template).jinja"),
            encoding: .utf8)
        return try InferenceEngine(
            path: TestPaths.referenceRoot.appendingPathComponent("tiny/\(model).gguf").path, threads: 2,
            chatTemplate: source)
    }

    static let tools = #"""
        [{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}, "exact": {"type": "boolean"}}, "required": ["zone", "exact"], "additionalProperties": false}, "strict": true}},
         {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}}]
        """#

    @Test(arguments: [("tiny-qwen2", "qwen2.5"), ("tiny-qwen3", "qwen3")])
    func forcedCallsAreWellFormed(_ model: String, _ template: String) async throws {
        let engine = try Self.engine(model, template: template)
        #expect(engine.rendersTools)
        try await RunningServer.with(state: .ready(engine)) { s in
            for choice in [#""required""#, #"{"type": "function", "function": {"name": "get_time"}}"#] {
                let body = #"""
                    {"model": "\#(engine.modelName)", "messages": [{"role": "user", "content": "Time?"}],
                     "tools": \#(Self.tools), "tool_choice": \#(choice), "parallel_tool_calls": false,
                     "chat_template_kwargs": {"enable_thinking": false}, "temperature": 0, "max_tokens": 200}
                    """#
                let r = try await offPool { try s.client(timeout: 120).postJSON("/v1/chat/completions", body) }
                #expect(r.status == 200, "\(r.text)")
                let choiceJSON = (r.json?["choices"] as? [[String: Any]])?.first ?? [:]
                #expect(choiceJSON["finish_reason"] as? String == "tool_calls", "\(r.text)")
                let message = choiceJSON["message"] as? [String: Any] ?? [:]
                let calls = message["tool_calls"] as? [[String: Any]] ?? []
                #expect(calls.count == 1, "\(r.text)")
                let f = calls.first?["function"] as? [String: Any] ?? [:]
                let arguments = try #require(
                    try? JSONSerialization.jsonObject(with: Data((f["arguments"] as? String ?? "").utf8))
                        as? [String: Any], "\(r.text)")
                if f["name"] as? String == "get_time" {
                    #expect(["UTC", "CET"].contains(arguments["zone"] as? String ?? "") && arguments["exact"] is Bool)
                    #expect(arguments.count == 2, "\(r.text)")
                } else {
                    #expect(f["name"] as? String == "ping" && arguments.isEmpty && choice == #""required""#)
                }
            }
            // The template renders the tools: the prompt is longer with them.
            let plain =
                #"{"model": "\#(engine.modelName)", "messages": [{"role": "user", "content": "Time?"}], "max_tokens": 1}"#
            let withTools =
                #"{"model": "\#(engine.modelName)", "messages": [{"role": "user", "content": "Time?"}], "max_tokens": 1, "tools": \#(Self.tools), "tool_choice": "none"}"#
            let a = try await offPool { try s.client(timeout: 120).postJSON("/v1/chat/completions", plain) }
            let b = try await offPool { try s.client(timeout: 120).postJSON("/v1/chat/completions", withTools) }
            let tokens = { (r: RawResponse) in (r.json?["usage"] as? [String: Any])?["prompt_tokens"] as? Int ?? 0 }
            #expect(tokens(b) > tokens(a) + 50, "\(a.text) \(b.text)")
        }
    }
}
