import Testing

@testable import ToolCalling

@Suite struct HermesParsingTests {
    let format = HermesFormat()

    @Test func oneCall() {
        let text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
        let a = StreamCheck.check(format, text)
        #expect(
            a
                == ParsedAnswer(
                    content: "", calls: [.init(name: "get_weather", arguments: #"{"city": "Paris"}"#, complete: true)]))
    }

    @Test func severalCallsWithTextBefore() {
        let text = """
            Let me check both.
            <tool_call>
            {"name": "get_weather", "arguments": {"city": "Paris"}}
            </tool_call>
            <tool_call>
            {"arguments": {}, "name": "get_time"}
            </tool_call>
            """
        let a = StreamCheck.check(format, text)
        #expect(a.content == "Let me check both.")
        #expect(a.calls.map(\.name) == ["get_weather", "get_time"])
        #expect(a.calls.map(\.arguments) == [#"{"city": "Paris"}"#, "{}"])
        #expect(a.calls.allSatisfy { $0.complete })
    }

    @Test func whitespaceVariationsAndMissingCloseTag() {
        let a = StreamCheck.check(format, #"<tool_call>{"name":"f","arguments":{"x":1}}</tool_call>  Done."#)
        #expect(a.calls == [.init(name: "f", arguments: #"{"x":1}"#, complete: true)])
        #expect(a.content == "Done.")
        let b = StreamCheck.check(format, "<tool_call>\n  {\"name\" : \"f\" ,\n \"arguments\" : {\"x\": [1, 2]} }")
        #expect(b.calls == [.init(name: "f", arguments: #"{"x": [1, 2]}"#, complete: true)])
    }

    @Test func callsInsideReasoning() {
        let text = """
            <think>
            I need the weather.
            <tool_call>
            {"name": "get_weather", "arguments": {"city": "Oslo"}}
            </tool_call>
            </think>

            <tool_call>
            {"name": "get_time", "arguments": {}}
            </tool_call>
            """
        let a = StreamCheck.check(format, text)
        #expect(a.reasoning == "I need the weather.")
        #expect(a.content == "")
        #expect(a.calls.map(\.name) == ["get_weather", "get_time"])
    }

    @Test func reasoningOpenedByThePrompt() {
        let f = format.startingInReasoning(true)
        let a = StreamCheck.check(f, "Thinking about it.\n</think>\n\nIt is sunny.")
        #expect(a.reasoning == "Thinking about it.")
        #expect(a.content == "It is sunny.")
        let b = StreamCheck.check(format, "<think>\nHmm.\n</think>\n\nHello!")
        #expect(b.reasoning == "Hmm.")
        #expect(b.content == "Hello!")
        #expect(format.parse("Plain answer", final: true).reasoning == nil)
    }

    @Test func escapesAndUnicodeInArguments() {
        let args = #"{"q": "caf\u00e9 \"quoted\" \\ 🌍 日本", "nested": {"a": [1, {"b": null}], "c": "}"}}"#
        let text = "<tool_call>\n{\"name\": \"search\", \"arguments\": \(args)}\n</tool_call>"
        let a = StreamCheck.check(format, text)
        #expect(a.calls == [.init(name: "search", arguments: args, complete: true)])
    }

    @Test func cutOffCallIsIncomplete() {
        let text = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par"
        let a = StreamCheck.check(format, text)
        #expect(a.content == "Sure.")
        #expect(a.calls == [.init(name: "get_weather", arguments: #"{"city": "Par"#, complete: false)])
    }

    @Test func heldBackMarkupIsReleasedWhenItIsNotMarkup() {
        #expect(format.parse("a <tool_", final: false).content == "a")
        #expect(format.parse("a <tool_", final: true).content == "a <tool_")
        #expect(format.parse("a <tool_call> is a tag", final: true).content == "a <tool_call> is a tag")
        StreamCheck.check(format, "x < y and <tool_call>x", markupFree: false)
    }
}
