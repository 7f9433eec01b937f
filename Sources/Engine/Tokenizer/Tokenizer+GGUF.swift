extension Tokenizer {
    /// Loads the tokenizer a GGUF model carries (`tokenizer.ggml.*`).
    ///
    /// Throws `TokenizerError.unsupportedModel` unless `tokenizer.ggml.model` is `gpt2`,
    /// `TokenizerError.unknownPreTokenizer` for a `tokenizer.ggml.pre` without implemented
    /// splitting rules, and `GGUFError` when a required key is missing or mistyped.
    public init(gguf: GGUFFile) throws {
        let model = try gguf.string("tokenizer.ggml.model")
        guard model == "gpt2" else { throw TokenizerError.unsupportedModel(model) }
        // llama.cpp treats a missing pre-type as "default", whose rules differ; refuse it.
        let pre = gguf.optionalString("tokenizer.ggml.pre") ?? "default"
        guard PreTokenizer(name: pre) != nil else { throw TokenizerError.unknownPreTokenizer(pre) }
        let tokens = try gguf.stringArray("tokenizer.ggml.tokens")
        let merges = try gguf.stringArray("tokenizer.ggml.merges")
        let types =
            gguf.metadata["tokenizer.ggml.token_type"] == nil ? [] : try gguf.int32Array("tokenizer.ggml.token_type")
        func optionalID(_ key: String) -> Int32? {
            gguf.optionalInt(key).flatMap { Int32(exactly: $0) }
        }
        try self.init(
            tokens: tokens, merges: merges, tokenTypes: types,
            bosID: optionalID("tokenizer.ggml.bos_token_id"), eosID: optionalID("tokenizer.ggml.eos_token_id"),
            preTokenizer: pre, eotID: optionalID("tokenizer.ggml.eot_token_id"),
            eomID: optionalID("tokenizer.ggml.eom_token_id"))
    }
}
