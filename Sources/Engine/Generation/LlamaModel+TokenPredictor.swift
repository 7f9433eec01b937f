import CKernels

extension LlamaModel: TokenPredictor {
    public var vocabularySize: Int { config.vocabularySize }
    public var contextLength: Int { config.contextLength }
    public var maxTokensPerPass: Int { LlamaModel.maxPassTokens }
    public var maxSequencesPerPass: Int { LlamaModel.maxSequencesPerBatch }

    public func makeSequence(capacity: Int) -> any PredictorSequence {
        makeCache(capacity: min(capacity, config.contextLength))
    }

    /// A copy of another sequence's first tokens, where that changes no later result: when every
    /// row's arithmetic is the same whichever piece of a prompt it is computed in. Rows of a
    /// reused prefix were computed in another request's pieces and the rest of the prompt goes
    /// on from a different cut, so models whose kernels follow llama.cpp's micro-batch (flash
    /// attention tiles, Q4_K's four-row and Q6_K's tiled orders) get no copies.
    public func makeSequence(capacity: Int, copying count: Int, of source: any PredictorSequence)
        -> (any PredictorSequence)?
    {
        guard rowsIndependentOfCut, let source = source as? KVCache, count <= source.count else { return nil }
        let cache = makeCache(capacity: min(capacity, config.contextLength))
        guard count <= cache.capacity, source.type == cache.type else { return nil }
        cache.copyPrefix(count, of: source)
        return cache
    }

    public var copiesPrefixesExactly: Bool { rowsIndependentOfCut }

    public var bytesPerSequenceToken: Int { kvBytesPerToken }

    public func predict(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard let cache = sequence as? KVCache else {
            preconditionFailure("a LlamaModel runs only sequences it made")
        }
        try forward(tokens: tokens, cache: cache, logits: logits)
    }

    /// A prompt's piece with the arithmetic of the whole prompt in one call.
    public func predict(
        prompt tokens: ArraySlice<Int32>, of promptLength: Int, sequence: any PredictorSequence,
        logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard let cache = sequence as? KVCache else {
            preconditionFailure("a LlamaModel runs only sequences it made")
        }
        try forward(prompt: tokens, of: promptLength, cache: cache, logits: logits)
    }

    /// Every row's logits in the prompt pass itself (`forward(scoring:)`).
    public func score(
        tokens: ArraySlice<Int32>, promptLength: Int, sequence: any PredictorSequence,
        rows: UnsafeMutableBufferPointer<Float>, normalizers: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard let cache = sequence as? KVCache else {
            preconditionFailure("a LlamaModel runs only sequences it made")
        }
        precondition(normalizers.count >= tokens.count, "score: fewer normalizers than tokens")
        try forward(scoring: tokens, of: promptLength, cache: cache, rows: rows)
        // Every row's log Σ exp, over both cores (a 512-token prompt's are 25 M exponentials).
        ck_rows_logsumexp(
            pool.raw, rows.baseAddress!, normalizers.baseAddress!, Int32(tokens.count), Int32(config.vocabularySize))
    }

    /// One pass over the weights for every sequence in the batch.
    public func predict(batch: [PredictionInput]) throws {
        try forward(batch: batch) { input in
            guard let cache = input.sequence as? KVCache else {
                preconditionFailure("a LlamaModel runs only sequences it made")
            }
            return BatchItem(tokens: input.tokens, cache: cache, logits: input.logits, promptLength: input.promptLength)
        }
    }
}

extension KVCache: PredictorSequence {}
