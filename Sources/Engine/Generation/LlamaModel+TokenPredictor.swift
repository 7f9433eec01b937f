extension LlamaModel: TokenPredictor {
    public var vocabularySize: Int { config.vocabularySize }
    public var contextLength: Int { config.contextLength }

    public func makeSequence(capacity: Int) -> any PredictorSequence {
        makeCache(capacity: min(capacity, config.contextLength))
    }

    public func predict(
        tokens: [Int32], sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard let cache = sequence as? KVCache else {
            preconditionFailure("a LlamaModel runs only sequences it made")
        }
        try forward(tokens: tokens, cache: cache, logits: logits)
    }
}

extension KVCache: PredictorSequence {}
