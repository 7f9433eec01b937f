import GenerationVocabulary

/// One model family's way of writing tool calls: how calls are parsed out of its answers, the
/// grammar that keeps its calls to the offered tools, and (for templates that know no tools) the
/// system text that teaches the format.
///
/// `parse` takes the whole answer so far and is safe for streaming: for growing snapshots parsed
/// with `final: false` and then the final parse, `content` and `reasoning` only grow (text that
/// may still turn out to be markup, such as a trailing `<tool_`, and trailing whitespace are held
/// back until they cannot be), calls are only appended, a call's name never changes once shown
/// and its `arguments` only grow. Surrounding whitespace of the content, of the reasoning and
/// around calls is dropped; text pieces that calls separate are joined with a line break.
///
/// Reasoning: a leading `<think>…</think>` (after optional whitespace) is the reasoning. When the
/// template's generation prompt already opened `<think>` (Qwen 3 with thinking, DeepSeek R1
/// distills), make the format with `startsInReasoning` true (`startingInReasoning(true)`): the
/// answer then starts inside the reasoning, and the grammar requires the reasoning to close.
public protocol ToolCallFormat: Sendable {
    /// "hermes", "llama3_json", "pythonic", "generic".
    var name: String { get }
    /// The answer starts inside `<think>` (opened by the prompt).
    var startsInReasoning: Bool { get }
    /// This format, with the answer starting inside `<think>` or not.
    func startingInReasoning(_ open: Bool) -> any ToolCallFormat
    /// The answer so far split into content, reasoning and calls; `final`: nothing more comes
    /// (held-back text is released, an open call stays incomplete).
    func parse(_ text: String, final: Bool) -> ParsedAnswer
    /// The grammar for an answer under `use`, or nil when there is nothing to constrain (no
    /// tools and no call required). `reasoning`: an optional leading `<think>…</think>`.
    func grammar(for use: ToolUse, reasoning: Bool) throws(ToolGrammarError) -> Grammar?
    /// A system text for templates that know no tools (`generic`); nil otherwise.
    func instruction(for use: ToolUse) -> String?
    /// Earlier calls written as this format's answers write them, for a history whose template
    /// does not render `tool_calls` itself (the model then reads its own earlier calls as text).
    func markup(for calls: [ToolCall]) -> String
}

extension ToolCallFormat {
    /// Whether the answer so far has closed its reasoning (`</think>` written): what was reasoning
    /// is then final, so a stream can end its reasoning item before the answer's text.
    public func closesReasoning(_ text: String) -> Bool {
        AnswerParser.closesReasoning(text, startsInReasoning: startsInReasoning)
    }
}
