import Testing

@testable import ToolCalling

/// Checks the streaming rules of `ToolCallFormat.parse` over every prefix of a text.
enum StreamCheck {
    /// Parses every prefix of `text` (scalar by scalar) with `final: false`, then the whole text
    /// with `final: true`, and expects each parse to extend the one before: content and reasoning
    /// only grow, calls are only appended, names never change, arguments only grow, complete
    /// never goes back. Returns the final parse.
    @discardableResult
    static func check(
        _ format: any ToolCallFormat, _ text: String, markupFree: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> ParsedAnswer {
        let scalars = Array(text.unicodeScalars)
        var previous = ParsedAnswer(content: "")
        var streamedContent = ""
        var streamedArguments: [String] = []
        for n in 0...scalars.count {
            var s = String.UnicodeScalarView()
            s.append(contentsOf: scalars[0..<n])
            let final = n == scalars.count
            let now = format.parse(String(s), final: false)
            let step = final ? format.parse(text, final: true) : now
            for parsed in final ? [now, step] : [step] {
                let at = "after \(n) scalars of \(text.debugDescription.prefix(60))"
                #expect(
                    parsed.content.hasPrefix(previous.content), "content shrank \(at)", sourceLocation: sourceLocation)
                if let r = previous.reasoning {
                    #expect(
                        parsed.reasoning?.hasPrefix(r) == true, "reasoning shrank \(at)", sourceLocation: sourceLocation
                    )
                }
                #expect(
                    parsed.calls.count >= previous.calls.count, "calls removed \(at)", sourceLocation: sourceLocation)
                for (old, new) in zip(previous.calls, parsed.calls) {
                    #expect(old.name == new.name, "name changed \(at)", sourceLocation: sourceLocation)
                    #expect(
                        new.arguments.hasPrefix(old.arguments),
                        "arguments shrank \(at): \(old.arguments) → \(new.arguments)",
                        sourceLocation: sourceLocation)
                    #expect(!old.complete || new.complete, "complete went back \(at)", sourceLocation: sourceLocation)
                }
                #expect(
                    !markupFree || !parsed.content.contains("<tool_call>"), "markup in content \(at)",
                    sourceLocation: sourceLocation)
                guard parsed.content.hasPrefix(previous.content) else { return step }
                streamedContent += parsed.content.dropFirst(previous.content.count)
                for (i, call) in parsed.calls.enumerated() {
                    if i == streamedArguments.count { streamedArguments.append("") }
                    let old = i < previous.calls.count ? previous.calls[i].arguments : ""
                    guard call.arguments.hasPrefix(old) else { return step }
                    streamedArguments[i] += call.arguments.dropFirst(old.count)
                }
                previous = parsed
            }
        }
        let whole = format.parse(text, final: true)
        #expect(streamedContent == whole.content, "streamed content differs", sourceLocation: sourceLocation)
        #expect(
            streamedArguments == whole.calls.map(\.arguments), "streamed arguments differ",
            sourceLocation: sourceLocation)
        return whole
    }
}
