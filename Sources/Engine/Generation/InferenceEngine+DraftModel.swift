extension InferenceEngine {
    /// A draft model for `model`: the same vocabulary token for token (a draft is a list of
    /// token ids), run on `model`'s compute pool.
    static func loadDraftModel(
        path: String, for model: LlamaModel, tokenizer: Tokenizer, contextLimit: Int?
    ) throws -> LlamaModel {
        let file = try GGUFFile(path: path)
        let draftTokenizer = try Tokenizer(gguf: file)
        guard draftTokenizer.vocabularySize == tokenizer.vocabularySize,
            (0..<Int32(tokenizer.vocabularySize)).allSatisfy({ draftTokenizer.tokenText($0) == tokenizer.tokenText($0) }
            )
        else {
            throw ModelError.invalidHyperParameter(
                "the draft model's vocabulary (\(draftTokenizer.vocabularySize) tokens) is not the model's (\(tokenizer.vocabularySize))"
            )
        }
        let draft = try LlamaModel(
            gguf: file, threads: model.threads, contextLimit: contextLimit ?? model.config.contextLength,
            sharing: model.pool)
        guard draft.config.vocabularySize == model.config.vocabularySize else {
            throw ModelError.invalidHyperParameter(
                "the draft model's output head has \(draft.config.vocabularySize) rows, the model's \(model.config.vocabularySize)"
            )
        }
        return draft
    }
}
