import Testing

@testable import ToolCalling

@Suite struct PythonicParsingTests {
    let format = PythonicFormat()

    @Test func oneCall() {
        let a = StreamCheck.check(format, #"[get_weather(city="Paris", days=3)]"#)
        #expect(
            a
                == ParsedAnswer(
                    content: "",
                    calls: [.init(name: "get_weather", arguments: #"{"city": "Paris", "days": 3}"#, complete: true)]))
    }

    @Test func severalCallsAndPythonLiterals() {
        let a = StreamCheck.check(
            format, "[f(a=True, b=None, c='it\\'s \"x\"'), g(), h(l=[1, 'two', (3, False)], d={'k': -2.5},)]")
        #expect(a.calls.map(\.name) == ["f", "g", "h"])
        #expect(
            a.calls.map(\.arguments) == [
                #"{"a": true, "b": null, "c": "it's \"x\""}"#, "{}",
                #"{"l": [1, "two", [3, false]], "d": {"k": -2.5}}"#,
            ])
        #expect(a.calls.allSatisfy { $0.complete })
        #expect(a.content == "")
    }

    @Test func textBeforeAndAfterCalls() {
        let a = StreamCheck.check(format, "Let me check.\n[lookup(q=\"x\")]\nDone.")
        #expect(a.content == "Let me check.\nDone.")
        #expect(a.calls == [.init(name: "lookup", arguments: #"{"q": "x"}"#, complete: true)])
        // A bracket that starts no call is text.
        let b = StreamCheck.check(format, "[1] see the note\n[link](x)")
        #expect(b.content == "[1] see the note\n[link](x)")
        #expect(b.calls.isEmpty)
    }

    @Test func fencedCalls() {
        let a = StreamCheck.check(format, "```tool_code\n[get_time(), f(x=1)]\n```")
        #expect(a.calls.map(\.name) == ["get_time", "f"])
        #expect(a.content == "")
        let b = StreamCheck.check(format, "```python\nprint([1])\n```")
        #expect(b.calls.isEmpty)
        #expect(b.content == "```python\nprint([1])\n```")
    }

    @Test func callInsideReasoning() {
        let a = StreamCheck.check(format, "<think>\nNeed data.\n[fetch(id=7)]\n</think>\n[show(id=7)]")
        #expect(a.reasoning == "Need data.")
        #expect(a.calls.map(\.name) == ["fetch", "show"])
        #expect(a.content == "")
    }

    @Test func escapesAndUnicode() {
        let a = StreamCheck.check(format, #"[say(text="caf\xe9 \u00e9 🌍\n\"q\" back\\slash", t='日本')]"#)
        #expect(
            a.calls == [
                .init(
                    name: "say", arguments: #"{"text": "caf\u00e9 \u00e9 🌍\n\"q\" back\\slash", "t": "日本"}"#,
                    complete: true)
            ])
    }

    @Test func cutOffCallIsIncomplete() {
        let a = StreamCheck.check(format, #"[get_weather(city="Par"#)
        #expect(a.calls == [.init(name: "get_weather", arguments: #"{"city": "Par"#, complete: false)])
        let b = format.parse("[f(flag=Tru", final: true)
        #expect(b.calls == [.init(name: "f", arguments: #"{"flag": "#, complete: false)])
    }
}
