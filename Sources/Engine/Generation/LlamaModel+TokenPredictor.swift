extension LlamaModel: TokenPredictor {
    public var vocabularySize: Int { config.vocabularySize }
    public var contextLength: Int { config.contextLength }
    public var maxTokensPerPass: Int { LlamaModel.maxPassTokens }
    public var maxSequencesPerPass: Int { LlamaModel.maxSequencesPerBatch }

    public func makeSequence(capacity: Int) -> any PredictorSequence {
        makeCache(capacity: min(capacity, config.contextLength))
    }

    public func predict(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard let cache = sequence as? KVCache else {
            preconditionFailure("a LlamaModel runs only sequences it made")
        }
        try forward(tokens: tokens, cache: cache, logits: logits)
    }

    /// One pass over the weights for every sequence in the batch.
    public func predict(batch: [PredictionInput]) throws {
        try forward(batch: batch) { input in
            guard let cache = input.sequence as? KVCache else {
                preconditionFailure("a LlamaModel runs only sequences it made")
            }
            return BatchItem(tokens: input.tokens, cache: cache, logits: input.logits)
        }
    }
}

extension KVCache: PredictorSequence {}
