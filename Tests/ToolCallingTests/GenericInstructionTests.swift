import GenerationVocabulary
import Testing

@testable import ToolCalling

@Suite struct GenericInstructionTests {
    let tools = [GrammarCheck.weather, GrammarCheck.time]

    @Test func listsEveryToolAndTheAnswerForm() throws {
        let text = try #require(GenericFormat().instruction(for: ToolUse(tools: tools)))
        for tool in tools {
            #expect(text.contains("- name: \(tool.name)"))
            #expect(text.contains(tool.description!))
        }
        #expect(text.contains(GrammarCheck.weather.parameters!))
        #expect(text.contains(#"{"tool_calls": [{"name": "<tool name>", "arguments": {"#))
        #expect(text.contains("plain text"))
        #expect(text.contains("several calls"))
    }

    @Test func wordedAfterTheChoice() throws {
        let none = try #require(GenericFormat().instruction(for: ToolUse(tools: tools, choice: .none)))
        #expect(none.contains("Do not call") && !none.contains("tool_calls"))
        let required = try #require(
            GenericFormat().instruction(for: ToolUse(tools: tools, choice: .required, parallel: false)))
        #expect(required.contains("must call at least one") && required.contains("exactly one call"))
        let named = try #require(GenericFormat().instruction(for: ToolUse(tools: tools, choice: .function("get_time"))))
        #expect(named.contains("must call the tool get_time") && named.contains("exactly one call"))
    }

    @Test func onlyGenericTeachesTheFormat() {
        #expect(GenericFormat().instruction(for: ToolUse(tools: [])) == nil)
        for name in ["hermes", "llama3_json", "pythonic"] {
            #expect(ToolCallFormats.named(name)?.instruction(for: ToolUse(tools: tools)) == nil)
        }
    }
}
