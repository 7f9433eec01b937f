import Foundation
import Testing

@testable import Engine

/// What a chat template is given for tool calling, in the shape Hugging Face's templates read:
/// `tools` as `{type, function: {name, description, parameters}}` with the schema's keys in the
/// order the client wrote them, an assistant's `tool_calls[].function.arguments` as an object
/// (templates write it with `tojson`), a tool result's `tool_call_id`, `reasoning_content`, and
/// `chat_template_kwargs` as further variables. The template below is written for this test in
/// the style of the Hermes/Qwen family's (a system block listing the tools, calls in
/// `<tool_call>` blocks, results in `<tool_response>` blocks).
@Suite struct ChatTemplateToolsTests {
    static let source = """
        {%- if tools %}<|im_start|>system
        Tools:{% for tool in tools %}
        {{ tool | tojson }}{% endfor %}<|im_end|>
        {% endif %}
        {%- for message in messages %}
        {%- if message.role == 'assistant' %}<|im_start|>assistant
        {% if message.reasoning_content and not (enable_thinking is defined and not enable_thinking) %}<think>{{ message.reasoning_content }}</think>{% endif %}
        {{- message.content }}
        {%- for call in message.tool_calls %}<tool_call>{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}, "id": "{{ call.id }}"}</tool_call>{% endfor %}<|im_end|>
        {% elif message.role == 'tool' %}<|im_start|>user
        <tool_response id="{{ message.tool_call_id }}">{{ message.content }}</tool_response><|im_end|>
        {% else %}<|im_start|>{{ message.role }}
        {{ message.content }}<|im_end|>
        {% endif %}
        {%- endfor %}
        {%- if add_generation_prompt %}<|im_start|>assistant
        {% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}{% endif %}
        """

    static func template() throws -> ChatTemplate {
        try ChatTemplate(source: source, origin: "test", tokenizer: TokenizerTestSupport.modelTokenizer())
    }

    static let weather = ToolDefinition(
        name: "get_weather", description: "Weather in a city",
        parameters:
            #"{"type":"object","properties":{"unit":{"enum":["c","f"]},"city":{"type":"string"}},"required":["city"]}"#)

    @Test func toolsAreRenderedWithTheirSchemaInTheClientsKeyOrder() throws {
        let text = try Self.template().renderText(
            [ChatMessage(role: .user, content: "Weather in Paris?")], tools: [Self.weather])
        #expect(
            text.contains(
                #"{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}, "city": {"type": "string"}}, "required": ["city"]}}}"#
            ), "\(text)")
        // Without tools the template sees none.
        let plain = try Self.template().renderText([ChatMessage(role: .user, content: "Hi")])
        #expect(!plain.contains("Tools:"), "\(plain)")
    }

    @Test func callsResultsAndReasoningReachTheTemplate() throws {
        let call = ToolCall(id: "call_7", name: "get_weather", arguments: #"{"city": "Paris \"centre\"", "n": 2}"#)
        let messages = [
            ChatMessage(role: .user, content: "Weather in Paris?"),
            ChatMessage(role: .assistant, content: "", toolCalls: [call], reasoning: "I should look it up."),
            ChatMessage(role: .tool, content: "18 C", toolCallID: "call_7"),
        ]
        let text = try Self.template().renderText(messages, tools: [Self.weather])
        #expect(
            text.contains(
                #"<think>I should look it up.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Paris \"centre\"", "n": 2}, "id": "call_7"}</tool_call>"#
            ), "\(text)")
        #expect(text.contains(#"<tool_response id="call_7">18 C</tool_response>"#), "\(text)")
        // chat_template_kwargs: a variable the template reads.
        let off = try Self.template().renderText(
            messages, tools: [Self.weather], arguments: #"{"enable_thinking": false}"#)
        #expect(!off.contains("I should look it up."), "\(off)")
        #expect(off.hasSuffix("<|im_start|>assistant\n<think></think>"), "\(off)")
        // The conversation's own names win over a variable of the same name.
        let shadow = try Self.template().renderText(messages, arguments: #"{"messages": [], "tools": null}"#)
        #expect(shadow.contains("18 C"), "\(shadow)")
    }

    @Test func argumentsAndSchemasAreDataNotControlTokens() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let call = ToolCall(id: "c", name: "f", arguments: #"{"s": "<|im_end|>"}"#)
        let pieces = try Self.template().render([
            ChatMessage(role: .user, content: "x"), ChatMessage(role: .assistant, content: "", toolCalls: [call]),
        ])
        let ids = tokenizer.encode(pieces)
        let imEnd = try #require(tokenizer.tokenID(spelledAs: "<|im_end|>"))
        // Two turns end with the control token (user, assistant); the argument's spelling is text.
        #expect(ids.filter { $0 == imEnd }.count == 2)
    }

    @Test func theJSONReaderKeepsOrderAndDecodesEscapes() throws {
        let value = try #require(JinjaValue(json: #"{"b": [1, 2.5, true, null], "a": "\u00e9\ud83d\ude00\n"}"#))
        #expect(
            try JinjaJSON.encode(value, indent: nil, sortKeys: false) == #"{"b": [1, 2.5, true, null], "a": "é😀\n"}"#)
        for bad in [#"{"a": }"#, "[1,", #""\ud800""#, "{} x", ""] {
            #expect(JinjaValue(json: bad) == nil, "\(bad)")
        }
    }
}
