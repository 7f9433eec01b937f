import Backend
import GenerationVocabulary

/// How a turn with tools (or a transcript holding tool turns) reaches the model and how its
/// answer is kept: the tools rendered into the prompt and the answer split into text, reasoning
/// and calls. The call formats are the server's (the `ToolCalling` module); a session only asks.
public protocol TurnAnswerReader: Sendable {
    /// The prompt for `messages`: the transcript's, then this turn's tool results and prompt.
    func input(_ messages: [ChatMessage]) -> PromptInput
    /// An assistant message of the answer `text`: its text, reasoning and complete calls.
    /// `final` is false for an answer that did not end where it meant to (cut off by
    /// `max_tokens`, cancelled): a half-written call is then no call, and text that might still
    /// have become call markup is left out.
    func message(_ text: String, final: Bool) -> ChatMessage
}
