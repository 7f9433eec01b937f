import Testing

@testable import ToolCalling

@Suite struct Llama3JSONParsingTests {
    let format = Llama3JSONFormat()

    @Test func oneCall() {
        let a = StreamCheck.check(format, #"{"name": "get_weather", "parameters": {"city": "Paris"}}"#)
        #expect(
            a
                == ParsedAnswer(
                    content: "", calls: [.init(name: "get_weather", arguments: #"{"city": "Paris"}"#, complete: true)]))
        let b = StreamCheck.check(format, #"<|python_tag|>{"type": "function", "name": "f", "parameters": {}}"#)
        #expect(b.calls == [.init(name: "f", arguments: "{}", complete: true)])
        #expect(b.content == "")
    }

    @Test func severalCallsSeparatedBySemicolonsOrLines() {
        let a = StreamCheck.check(
            format, #"{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {"y": [2]}}"#)
        #expect(a.calls.map(\.name) == ["a", "b"])
        #expect(a.calls.map(\.arguments) == [#"{"x": 1}"#, #"{"y": [2]}"#])
        #expect(a.content == "")
        let b = StreamCheck.check(format, "{\"name\": \"a\", \"parameters\": {}}\n{\"name\": \"b\", \"arguments\": {}}")
        #expect(b.calls.map(\.name) == ["a", "b"])
        #expect(b.content == "")
    }

    @Test func textBeforeCalls() {
        let a = StreamCheck.check(format, "I will look it up.\n{\"name\": \"f\", \"parameters\": {\"q\": \"x\"}}")
        #expect(a.content == "I will look it up.")
        #expect(a.calls == [.init(name: "f", arguments: #"{"q": "x"}"#, complete: true)])
        let b = StreamCheck.check(format, #"Calling now <|python_tag|>{"name": "f", "parameters": {}}"#)
        #expect(b.content == "Calling now")
        #expect(b.calls.count == 1)
        // Leading whitespace of the answer is no text; mid-line JSON is.
        #expect(StreamCheck.check(format, "\n  {\"name\": \"f\", \"parameters\": {}}").calls.count == 1)
        #expect(StreamCheck.check(format, "See {\"name\": \"f\", \"parameters\": {}}").calls.isEmpty)
        // JSON that is not a call is text.
        let c = StreamCheck.check(format, #"{"answer": 42}"#)
        #expect(c.content == #"{"answer": 42}"#)
        #expect(c.calls.isEmpty)
    }

    @Test func callInsideReasoning() {
        let a = StreamCheck.check(
            format, "<think>\nLook it up.\n{\"name\": \"f\", \"parameters\": {\"a\": true}}\n</think>\nDone.")
        #expect(a.reasoning == "Look it up.")
        #expect(a.content == "Done.")
        #expect(a.calls == [.init(name: "f", arguments: #"{"a": true}"#, complete: true)])
    }

    @Test func escapesUnicodeAndNesting() {
        let args = #"{"s": "\u00e9\"\\n 🎉", "o": {"p": {"q": [null, false, -1.5e3]}}}"#
        let a = StreamCheck.check(format, #"{"name": "f", "parameters": "# + args + "}")
        #expect(a.calls == [.init(name: "f", arguments: args, complete: true)])
    }

    @Test func builtInToolCalls() {
        let a = StreamCheck.check(format, #"<|python_tag|>brave_search.call(query="weather in Paris", n=3)"#)
        #expect(
            a.calls == [
                .init(name: "brave_search", arguments: #"{"query": "weather in Paris", "n": 3}"#, complete: true)
            ])
        #expect(a.content == "")
        let b = StreamCheck.check(format, #"<|python_tag|>wolfram_alpha.call(query="2+2"#)
        #expect(b.calls == [.init(name: "wolfram_alpha", arguments: #"{"query": "2+2"#, complete: false)])
        // Code after the tag (the code interpreter) is not a call.
        #expect(format.parse("<|python_tag|>print(1)", final: true).calls.isEmpty)
    }

    @Test func cutOffCallIsIncomplete() {
        let a = StreamCheck.check(format, #"{"name": "f", "parameters": {"city": "Ber"#)
        #expect(a.calls == [.init(name: "f", arguments: #"{"city": "Ber"#, complete: false)])
        #expect(a.content == "")
    }
}
