import Testing

@testable import ToolCalling

/// A thinking model's answer without tools: the reasoning apart, nothing read as a call, and the
/// same streaming rules as the call formats.
@Suite struct ReasoningFormatTests {
    @Test func theReasoningIsSplitAndNothingIsACall() {
        let f = ReasoningFormat()
        let answer = "<think>The user wants JSON.\n<tool_call>not a call</tool_call></think>\n\n{\"tool_calls\": []}"
        let parsed = f.parse(answer, final: true)
        #expect(parsed.reasoning == "The user wants JSON.\n<tool_call>not a call</tool_call>")
        #expect(parsed.content == "{\"tool_calls\": []}")
        #expect(parsed.calls.isEmpty)
        #expect(f.parse("Plain answer.", final: true) == ParsedAnswer(content: "Plain answer."))
        // Started inside the reasoning by the prompt.
        let open = ReasoningFormat(startsInReasoning: true).parse("hmm</think>Yes.", final: true)
        #expect(open.reasoning == "hmm" && open.content == "Yes.")
    }

    @Test func everyPrefixOnlyGrows() {
        let f = ReasoningFormat()
        let answer = "<think>Two steps: a, then b.</think>\n\nThe answer is 42 <tool_call>"
        var content = ""
        var reasoning = ""
        for end in answer.indices + [answer.endIndex] {
            let p = f.parse(String(answer[..<end]), final: false)
            #expect(p.content.hasPrefix(content) && (p.reasoning ?? "").hasPrefix(reasoning), "\(answer[..<end])")
            content = p.content
            reasoning = p.reasoning ?? ""
            #expect(p.calls.isEmpty)
        }
        let last = f.parse(answer, final: true)
        #expect(last.content.hasPrefix(content) && last.content == "The answer is 42 <tool_call>")
    }
}
