import Foundation
import Testing

@testable import ToolCalling

@Suite struct DetectTests {
    @Test func detectsEachFamilyByItsMarkers() {
        let qwen = "{%- if tools %}...<tools>{{ tool | tojson }}</tools>...<tool_call>\\n{\"name\": <function-name>}"
        #expect(ToolCallFormats.detect(templateSource: qwen).name == "hermes")
        let llama31 =
            "{%- if message.role == \"ipython\" %}<|start_header_id|>ipython<|end_header_id|>{{- \"<|python_tag|>\" }}"
        #expect(ToolCallFormats.detect(templateSource: llama31).name == "llama3_json")
        #expect(
            ToolCallFormats.detect(templateSource: "<|start_header_id|>ipython<|end_header_id|>").name == "llama3_json")
        let pythonic =
            "You SHOULD NOT include any other text in the response.\n[func_name1(params_name1=params_value1), func_name2(params)]<|start_header_id|>ipython"
        #expect(ToolCallFormats.detect(templateSource: pythonic).name == "pythonic")
        let smol = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>"
        #expect(ToolCallFormats.detect(templateSource: smol).name == "generic")
        #expect(ToolCallFormats.detect(templateSource: nil).name == "generic")
    }

    /// The real templates the engine's tests keep: Qwen's teach `<tool_call>`; Llama 3 (not 3.1),
    /// Gemma 3 and SmolLM2 know no tools.
    @Test(arguments: [
        ("qwen2.5", "hermes"), ("qwen3", "hermes"), ("llama3", "generic"), ("gemma3", "generic"),
        ("smollm2", "generic"),
    ])
    func detectsTheFixtureTemplates(_ file: String, _ expected: String) throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("EngineTests/Fixtures/templates/\(file).jinja")
        let source = try String(contentsOf: url, encoding: .utf8)
        #expect(ToolCallFormats.detect(templateSource: source).name == expected)
    }

    @Test func namedFormats() {
        for name in ToolCallFormats.names { #expect(ToolCallFormats.named(name)?.name == name) }
        #expect(ToolCallFormats.named("xml") == nil)
        #expect(ToolCallFormats.named("hermes")?.startingInReasoning(true).startsInReasoning == true)
    }
}
