/// One part of a prompt: ordinary text, which is tokenized without recognising special tokens,
/// or a special token given by id, which only the chat template (never user content) produces.
public enum PromptPiece: Sendable, Equatable {
    case text(String)
    case special(Int32)
    /// Text from the chat template's own literals: spellings of control tokens in it become those tokens.
    case template(String)
}
