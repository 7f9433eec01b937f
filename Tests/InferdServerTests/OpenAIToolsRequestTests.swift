import Engine
import Foundation
import StructuredOutput
import Testing

@testable import InferdServer

/// A chat completion's tools, tool choice and tool turns as read from the body: what is accepted
/// is kept exactly (a schema's keys in the client's order), and every refusal names its field.
@Suite struct OpenAIToolsRequestTests {
    /// As a route reads a body: parsed once, keys in their order.
    func fields(_ json: String) throws -> OpenAIFields {
        let value = try JSONParser.parse(json)
        guard case .object(let object) = OpenAIJSON(value) else {
            throw OpenAIError.invalid("not an object", param: nil)
        }
        return OpenAIFields(object, ordered: value)
    }

    static let user = #"[{"role": "user", "content": "Weather in Paris?"}]"#
    static let weather =
        #"{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}}, "strict": true}}"#

    func request(_ extra: String, messages: String = user) throws -> OpenAIChatRequest {
        try OpenAIChatRequest(try fields(#"{"model": "m", "messages": \#(messages)\#(extra)}"#))
    }

    func param(_ extra: String, messages: String = user) throws -> String? {
        do {
            _ = try request(extra, messages: messages)
            return nil
        } catch let e as OpenAIError {
            #expect(e.status == 400, "\(e.message)")
            return e.param
        }
    }

    @Test func toolsChoiceAndParallelAreRead() throws {
        let r = try request(#", "tools": [\#(Self.weather)]"#)
        let use = try #require(r.tools)
        #expect(use.choice == .auto && use.parallel)
        #expect(use.tools.count == 1 && use.tools[0].name == "get_weather" && use.tools[0].strict)
        #expect(use.tools[0].description == "d")
        // Key order as written: z before a.
        #expect(
            use.tools[0].parameters == #"{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}"#
        )
        for (choice, expected) in [
            (#""none""#, ToolChoice.none), (#""required""#, .required), (#""auto""#, .auto),
            (#"{"type": "function", "function": {"name": "get_weather"}}"#, .function("get_weather")),
        ] {
            let r = try request(
                #", "tools": [\#(Self.weather)], "tool_choice": \#(choice), "parallel_tool_calls": false"#)
            #expect(r.tools?.choice == expected && r.tools?.parallel == false, "\(choice)")
        }
        // No tools: no tool use; tool_choice none is the neutral value clients send.
        #expect(try request(#", "tools": [], "tool_choice": "none""#).tools == nil)
    }

    @Test func badToolsAreRefusedNamingTheField() throws {
        let web = #"{"type": "web_search"}"#
        #expect(try param(#", "tools": [\#(web)]"#) == "tools[0].type")
        #expect(try param(#", "tools": [{"type": "function"}]"#) == "tools[0].function")
        #expect(try param(#", "tools": [{"type": "function", "function": {}}]"#) == "tools[0].function.name")
        #expect(
            try param(#", "tools": [{"type": "function", "function": {"name": "a b"}}]"#) == "tools[0].function.name")
        let long = String(repeating: "x", count: 65)
        #expect(
            try param(#", "tools": [{"type": "function", "function": {"name": "\#(long)"}}]"#)
                == "tools[0].function.name")
        #expect(
            try param(#", "tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]"#)
                == "tools[0].function.parameters")
        #expect(try param(#", "tools": [\#(Self.weather), \#(Self.weather)]"#) == "tools[1].function.name")
        #expect(try param(#", "tools": {}"#) == "tools")
        #expect(try param(#", "tools": [\#(Self.weather)], "tool_choice": "sometimes""#) == "tool_choice")
        #expect(
            try param(
                #", "tools": [\#(Self.weather)], "tool_choice": {"type": "function", "function": {"name": "nope"}}"#)
                == "tool_choice.function.name")
        #expect(try param(#", "tool_choice": "required""#) == "tool_choice")
        #expect(try param(#", "tools": [\#(Self.weather)], "parallel_tool_calls": "yes""#) == "parallel_tool_calls")
        #expect(try param(#", "functions": [{"name": "f"}]"#) == "functions")
        #expect(try param(#", "chat_template_kwargs": {"a": 1}, "session_id": "s""#) == "chat_template_kwargs")
        #expect(try param(#", "chat_template_kwargs": 3"#) == "chat_template_kwargs")
    }

    @Test func toolTurnsInTheHistoryAreReadAndChecked() throws {
        let history = #"""
            [{"role": "user", "content": "Weather?"},
             {"role": "assistant", "content": null, "reasoning_content": "look it up",
              "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"z\": \"Paris\"}"}}]},
             {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}]
            """#
        let r = try request(#", "chat_template_kwargs": {"enable_thinking": false, "a": 1}"#, messages: history)
        #expect(r.messages.count == 3)
        #expect(r.messages[1].toolCalls == [ToolCall(id: "call_1", name: "get_weather", arguments: #"{"z": "Paris"}"#)])
        #expect(r.messages[1].content == "" && r.messages[1].reasoning == "look it up")
        #expect(r.messages[2].role == .tool && r.messages[2].toolCallID == "call_1" && r.messages[2].content == "18 C")
        #expect(r.templateArguments == #"{"enable_thinking":false,"a":1}"#)

        let unknown = history.replacingOccurrences(of: #""tool_call_id": "call_1""#, with: #""tool_call_id": "call_9""#)
        #expect(try param("", messages: unknown) == "messages[2].tool_call_id")
        let badArguments = history.replacingOccurrences(of: #""{\"z\": \"Paris\"}""#, with: #""[1]""#)
        #expect(try param("", messages: badArguments) == "messages[1].tool_calls[0].function.arguments")
        let userCalls = #"[{"role": "user", "content": "x", "tool_calls": [{"id": "c"}]}]"#
        #expect(try param("", messages: userCalls) == "messages[0].tool_calls")
        let noName = #"[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {}}]}]"#
        #expect(try param("", messages: noName) == "messages[0].tool_calls[0].function.name")
        let nulID =
            #"[{"role": "assistant", "content": "", "tool_calls": [{"id": "c\u0000", "function": {"name": "f"}}]}]"#
        #expect(try param("", messages: nulID) == "messages[0].tool_calls[0].id")
    }
}
