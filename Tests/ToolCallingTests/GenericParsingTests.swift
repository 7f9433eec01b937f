import Testing

@testable import ToolCalling

@Suite struct GenericParsingTests {
    let format = GenericFormat()

    @Test func oneCall() {
        let a = StreamCheck.check(format, #"{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}"#)
        #expect(
            a
                == ParsedAnswer(
                    content: "", calls: [.init(name: "get_weather", arguments: #"{"city": "Paris"}"#, complete: true)]))
    }

    @Test func severalCalls() {
        let a = StreamCheck.check(
            format,
            """
            {
              "tool_calls": [
                {"name": "a", "arguments": {"x": 1}},
                {"arguments": {"y": {"z": []}}, "name": "b"}
              ]
            }
            """)
        #expect(a.calls.map(\.name) == ["a", "b"])
        #expect(a.calls.map(\.arguments) == [#"{"x": 1}"#, #"{"y": {"z": []}}"#])
        #expect(a.content == "")
    }

    @Test func plainTextAndTextBeforeCalls() {
        let a = StreamCheck.check(format, "The answer is {x}.")
        #expect(a.content == "The answer is {x}.")
        let b = StreamCheck.check(format, "Checking.\n{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}}]}")
        #expect(b.content == "Checking.")
        #expect(b.calls == [.init(name: "f", arguments: "{}", complete: true)])
        let c = StreamCheck.check(format, #"{"response": "hi"}"#)
        #expect(c.content == #"{"response": "hi"}"#)
    }

    @Test func fencedCalls() {
        let a = StreamCheck.check(
            format, "Here:\n```json\n{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"a\": 1}}]}\n```\nThanks")
        #expect(a.calls == [.init(name: "f", arguments: #"{"a": 1}"#, complete: true)])
        #expect(a.content == "Here:\nThanks")
        // A fence around other JSON is text.
        let b = StreamCheck.check(format, "```json\n{\"a\": 1}\n```")
        #expect(b.content == "```json\n{\"a\": 1}\n```")
        #expect(b.calls.isEmpty)
    }

    @Test func callInsideReasoning() {
        let a = StreamCheck.check(
            format, "<think>\n{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"a\": 1}}]}\n</think>\nOK")
        #expect(a.reasoning == "")
        #expect(a.content == "OK")
        #expect(a.calls == [.init(name: "f", arguments: #"{"a": 1}"#, complete: true)])
    }

    @Test func escapesAndUnicode() {
        let args = #"{"t": "\u00e9\"😀\\", "n": {"deep": {"er": ["}", "]"]}}}"#
        let a = StreamCheck.check(format, #"{"tool_calls": [{"name": "f", "arguments": "# + args + "}]}")
        #expect(a.calls == [.init(name: "f", arguments: args, complete: true)])
    }

    @Test func cutOffCallIsIncomplete() {
        let a = StreamCheck.check(
            format, #"{"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"q": 1"#)
        #expect(
            a.calls == [
                .init(name: "a", arguments: "{}", complete: true),
                .init(name: "b", arguments: #"{"q": 1"#, complete: false),
            ])
    }
}
