import GenerationVocabulary

/// A backend's tokenizer as clients may use it (vLLM's `/tokenize`, `/detokenize` and
/// `/tokenizer_info`, which evaluation harnesses probe): text to the ids this backend runs, ids
/// back to text, and its special tokens' spellings.
public protocol TokenizerAccess: Sendable {
    /// The ids of `text`. `addSpecialTokens`: as a raw prompt is run (BOS when the model adds
    /// one, control-token spellings read as those tokens); otherwise plain text, nothing added.
    func tokenize(_ text: String, addSpecialTokens: Bool) -> [Int32]
    /// The text of `ids` (control tokens spelled out); nil when an id is outside the vocabulary.
    func detokenize(_ ids: [Int32]) -> String?
    /// One token's text as the vocabulary spells its bytes (U+FFFD for part of a character).
    func tokenString(_ id: Int32) -> String?
    var bosToken: String? { get }
    var eosToken: String? { get }
    var padToken: String? { get }
}
