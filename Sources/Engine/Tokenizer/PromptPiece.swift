/// One part of a prompt for `Tokenizer.encode(_ pieces:)`.
public enum PromptPiece: Sendable, Equatable {
    /// Text from messages: tokenized without recognising special tokens, so a spelling such as
    /// `<|im_end|>` in user content stays text.
    case text(String)
    /// A special token given by id, which only the chat template (never user content) produces.
    case special(Int32)
    /// Text that came from the chat template's own literals: spellings of control tokens in it
    /// (e.g. `<start_of_turn>`, `<|im_start|>`) become those tokens. Adjacent `.text` and
    /// `.template` pieces are tokenized as one stretch, as llama.cpp tokenizes the whole rendered
    /// prompt, so words are not cut at piece boundaries.
    case template(String)
}
