/// The algorithm that turns a stretch of text into tokens: byte-level BPE (`BPEModel`) or
/// SentencePiece (`SPMModel`). `Tokenizer` cuts special tokens out of the text first and hands
/// each stretch between them to its model.
protocol TokenizerModel: Sendable {
    /// The vocabulary: spellings, kinds, decoded pieces and lookup by spelling.
    var table: TokenTable { get }
    /// Whether the model puts a space in front of a stretch that starts the text or follows a
    /// special token (SentencePiece's `add_space_prefix`); decoding then drops it once.
    var addsSpacePrefix: Bool { get }
    /// Whether llama.cpp adds BOS for this model when `tokenizer.ggml.add_bos_token` is absent.
    var addsBOSByDefault: Bool { get }

    /// Appends the tokens of `text`, which holds no special tokens. `followsSpecial` is true for
    /// a stretch at the start of the text or right after a special token.
    func encode(
        _ text: UnsafeBufferPointer<UInt8>, followsSpecial: Bool, scratch: inout EncodingScratch,
        into output: inout [Int32])
}
