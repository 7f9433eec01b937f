import GenerationVocabulary

/// Answers of a thinking model without tools: a leading `<think>…</think>` is the reasoning,
/// the rest the content, and nothing is read as a call (a request without tools makes none,
/// whatever the text looks like). Streaming-safe like the call formats (`ToolCallFormat`).
public struct ReasoningFormat: ToolCallFormat {
    public let name = "reasoning"
    public let startsInReasoning: Bool

    public init(startsInReasoning: Bool = false) {
        self.startsInReasoning = startsInReasoning
    }

    public func startingInReasoning(_ open: Bool) -> any ToolCallFormat { ReasoningFormat(startsInReasoning: open) }

    public func parse(_ text: String, final: Bool) -> ParsedAnswer {
        AnswerParser.parse(text, final: final, startsInReasoning: startsInReasoning, syntax: NoCallSyntax())
    }

    /// No tools: nothing to constrain.
    public func grammar(for use: ToolUse, reasoning: Bool) throws(ToolGrammarError) -> Grammar? { nil }
    public func instruction(for use: ToolUse) -> String? { nil }
    public func markup(for calls: [ToolCall]) -> String { "" }
}

/// Call markup never starts: every byte is text.
struct NoCallSyntax: CallSyntax {
    func opener(_ b: [UInt8], at p: Int, end: Int, lineStart: Bool) -> OpenerMatch { .no }
    func calls(_ b: [UInt8], at p: Int, end: Int, ended: Bool) -> CallRun { CallRun(calls: [], end: p) }
}
