/// Why a tokenizer could not be built from a model's vocabulary.
public enum TokenizerError: Error, Equatable, CustomStringConvertible {
    /// `tokenizer.ggml.model` names a tokenizer family other than byte-level BPE (`gpt2`) and
    /// SentencePiece (`llama`).
    case unsupportedModel(String)
    /// `tokenizer.ggml.pre` names a pre-tokenizer whose splitting rules are not implemented.
    case unknownPreTokenizer(String)
    /// The vocabulary arrays are inconsistent or a required entry is missing.
    case invalidVocabulary(String)

    public var description: String {
        switch self {
        case .unsupportedModel(let model):
            return
                "unsupported tokenizer model '\(model)': implemented are byte-level BPE ('gpt2') and SentencePiece ('llama')"
        case .unknownPreTokenizer(let pre):
            return
                "unknown pre-tokenizer '\(pre)': supported are \(PreTokenizer.supportedNames.joined(separator: ", "))"
        case .invalidVocabulary(let reason):
            return "invalid tokenizer vocabulary: \(reason)"
        }
    }
}
