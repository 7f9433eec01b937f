import CKernels

extension LlamaModel: TokenPredictor {
    public var vocabularySize: Int { config.vocabularySize }
    public var contextLength: Int { config.contextLength }
    public var maxTokensPerPass: Int { LlamaModel.maxPassTokens }
    public var maxSequencesPerPass: Int { LlamaModel.maxSequencesPerBatch }

    public func makeSequence(capacity: Int) -> any PredictorSequence {
        makeCache(capacity: min(capacity, config.contextLength))
    }

    /// A copy of another sequence's first tokens (the prefix cache's; `reusablePrefix` says how
    /// many give the fresh rows).
    public func makeSequence(capacity: Int, copying count: Int, of source: any PredictorSequence)
        -> (any PredictorSequence)?
    {
        guard let source = source as? KVCache, count <= source.count else { return nil }
        let cache = makeCache(capacity: min(capacity, config.contextLength))
        guard count <= cache.capacity, source.type == cache.type else { return nil }
        cache.copyPrefix(count, of: source)
        return cache
    }

    public var copiesPrefixesExactly: Bool { true }

    /// The rows before the first whose arithmetic differs between a prompt of
    /// `keptPromptLength` tokens and one of `promptLength` (`rowArithmetic`).
    public func reusablePrefix(_ shared: Int, keptPromptLength: Int, promptLength: Int) -> Int {
        var p = 0
        while p < shared, rowArithmetic(p, inPromptOf: keptPromptLength) == rowArithmetic(p, inPromptOf: promptLength) {
            p += 1
        }
        return p
    }

    public var bytesPerSequenceToken: Int { kvBytesPerToken }

    public func predict(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        try forward(tokens: tokens, cache: Self.kvCache(sequence), logits: logits)
    }

    /// A prompt's piece with the arithmetic of the whole prompt in one call.
    public func predict(
        prompt tokens: ArraySlice<Int32>, of promptLength: Int, sequence: any PredictorSequence,
        logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        try forward(prompt: tokens, of: promptLength, cache: Self.kvCache(sequence), logits: logits)
    }

    /// Drafted tokens' decode steps in one pass (`forward(decodeRows:)`).
    public func verify(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, rows: UnsafeMutableBufferPointer<Float>
    ) throws {
        try forward(decodeRows: tokens, cache: Self.kvCache(sequence), rows: rows)
    }

    /// Every row's logits in the prompt pass itself (`forward(scoring:)`).
    public func score(
        tokens: ArraySlice<Int32>, promptLength: Int, sequence: any PredictorSequence,
        rows: UnsafeMutableBufferPointer<Float>, normalizers: UnsafeMutableBufferPointer<Float>
    ) throws {
        precondition(normalizers.count >= tokens.count, "score: fewer normalizers than tokens")
        try forward(scoring: tokens, of: promptLength, cache: Self.kvCache(sequence), rows: rows)
        // Every row's log Σ exp, over both cores (a 512-token prompt's are 25 M exponentials).
        ck_rows_logsumexp(
            pool.raw, rows.baseAddress!, normalizers.baseAddress!, Int32(tokens.count), Int32(config.vocabularySize))
    }

    /// One pass over the weights for every sequence in the batch.
    public func predict(batch: [PredictionInput]) throws {
        try forward(batch: batch) { input in
            BatchItem(
                tokens: input.tokens, cache: Self.kvCache(input.sequence), logits: input.logits,
                promptLength: input.promptLength)
        }
    }
}

extension KVCache: PredictorSequence {}

extension LlamaModel {
    /// A sequence as the KV cache it is: a LlamaModel runs only sequences it made.
    static func kvCache(_ sequence: any PredictorSequence) -> KVCache {
        guard let cache = sequence as? KVCache else {
            preconditionFailure("a LlamaModel runs only sequences it made")
        }
        return cache
    }
}
