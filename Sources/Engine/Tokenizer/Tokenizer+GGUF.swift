extension Tokenizer {
    /// Loads the tokenizer a GGUF model carries (`tokenizer.ggml.*`).
    ///
    /// `tokenizer.ggml.model` `gpt2` is byte-level BPE (its `tokenizer.ggml.pre` must be one with
    /// implemented splitting rules), `llama` is SentencePiece. Throws
    /// `TokenizerError.unsupportedModel` for other models, `TokenizerError.unknownPreTokenizer`
    /// for an unimplemented pre-tokenizer, and `GGUFError` when a required key is missing or
    /// mistyped.
    public init(gguf: GGUFFile) throws {
        let model = try gguf.string("tokenizer.ggml.model")
        let tokens = try gguf.stringArray("tokenizer.ggml.tokens")
        let types =
            gguf.metadata["tokenizer.ggml.token_type"] == nil ? [] : try gguf.int32Array("tokenizer.ggml.token_type")
        func optionalID(_ key: String) -> Int32? {
            gguf.optionalInt(key).flatMap { Int32(exactly: $0) }
        }
        let addBOS = gguf.optionalBool("tokenizer.ggml.add_bos_token")
        switch model {
        case "gpt2":
            // llama.cpp uses its "default" pre-tokenizer when the key is missing.
            let pre = gguf.optionalString("tokenizer.ggml.pre") ?? "default"
            guard PreTokenizer(name: pre) != nil else { throw TokenizerError.unknownPreTokenizer(pre) }
            let merges = try gguf.stringArray("tokenizer.ggml.merges")
            try self.init(
                tokens: tokens, merges: merges, tokenTypes: types,
                bosID: optionalID("tokenizer.ggml.bos_token_id"), eosID: optionalID("tokenizer.ggml.eos_token_id"),
                preTokenizer: pre, eotID: optionalID("tokenizer.ggml.eot_token_id"),
                eomID: optionalID("tokenizer.ggml.eom_token_id"), addBOS: addBOS)
        case "llama":
            // llama.cpp's defaults for SentencePiece vocabularies: <unk> 0, <s> 1, </s> 2.
            func idOrDefault(_ key: String, _ fallback: Int32) -> Int32? {
                optionalID(key) ?? (Int(fallback) < tokens.count ? fallback : nil)
            }
            try self.init(
                sentencePieceTokens: tokens, scores: try Self.floatArray(gguf, "tokenizer.ggml.scores"),
                tokenTypes: types, bosID: idOrDefault("tokenizer.ggml.bos_token_id", 1),
                eosID: idOrDefault("tokenizer.ggml.eos_token_id", 2),
                unknownID: idOrDefault("tokenizer.ggml.unknown_token_id", 0),
                addSpacePrefix: gguf.optionalBool("tokenizer.ggml.add_space_prefix") ?? true,
                eotID: optionalID("tokenizer.ggml.eot_token_id"), eomID: optionalID("tokenizer.ggml.eom_token_id"),
                addBOS: addBOS)
        default:
            throw TokenizerError.unsupportedModel(model)
        }
        paddingID = optionalID("tokenizer.ggml.padding_token_id")
        rightStrippedIDs = Self.rightStrippedIDs(name: gguf.optionalString("general.name") ?? "", table: table)
    }

    /// llama.cpp gives a file whose `general.name` says "phi-3" or "phi3" (any case) Phi-3's
    /// token attributes: whitespace after its special tokens (control, user-defined, unknown) is
    /// dropped, except after `<unk>`, `<s>` and `<|endoftext|>`; `</s>` drops it too.
    static func rightStrippedIDs(name: String, table: TokenTable) -> Set<Int32> {
        let lowered = name.lowercased()
        guard lowered.contains("phi-3") || lowered.contains("phi3") else { return [] }
        var ids = Set(table.specialTokens.map(\.id))
        if let end = table.lookup.id("</s>") { ids.insert(end) }
        for spelling in ["<unk>", "<s>", "<|endoftext|>"] {
            if let id = table.lookup.id(spelling) { ids.remove(id) }
        }
        return ids
    }

    /// An optional array of float32 (empty when the key is absent).
    private static func floatArray(_ gguf: GGUFFile, _ key: String) throws -> [Float] {
        guard let value = gguf.metadata[key] else { return [] }
        guard let items = value.arrayValue else {
            throw GGUFError.wrongKeyType(key: key, expected: "array of float32", found: value.typeName)
        }
        var out: [Float] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .float32(let number) = item else {
                throw GGUFError.wrongKeyType(key: key, expected: "array of float32", found: "array of \(item.typeName)")
            }
            out.append(number)
        }
        return out
    }
}
