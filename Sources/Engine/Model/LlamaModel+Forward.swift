import CKernels

/// The pass's entry points: tokens of one sequence, a piece of a prompt, a scored prompt, and
/// many sequences at once. Each cuts its tokens into the chunks `runChunk` computes and tells
/// every chunk the micro-batch llama.cpp would have put its rows in (`Segment`), which decides
/// their arithmetic.
extension LlamaModel {
    /// Processes `tokens` at positions `cache.count ..< cache.count + tokens.count`, appends their
    /// keys and values to the cache, and writes the logits of the last token into `logits`
    /// (`vocabularySize` floats). Throws before doing anything when the cache would overflow.
    public func forward(tokens: [Int32], cache: KVCache, logits: UnsafeMutableBufferPointer<Float>) throws {
        try forward(tokens: tokens[...], cache: cache, logits: logits)
    }

    /// The same for a slice (a decode step passes the last token of its history, allocating
    /// nothing). The tokens given at once are llama.cpp's call: its micro-batches are cut from them.
    public func forward(tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutableBufferPointer<Float>) throws {
        guard !tokens.isEmpty else { return }
        try validate(tokens: tokens, cache: cache, logits: logits)
        lock.lock()
        defer { lock.unlock() }
        forwardLocked(
            tokens: tokens, origin: tokens.startIndex, promptLength: tokens.count, cache: cache, logits: logits)
    }

    /// A piece of a prompt of `promptLength` tokens, whose indices are the tokens' positions in
    /// it: computed with the arithmetic of one llama.cpp call given the whole prompt, so a prompt
    /// fed in pieces (the engine's 64-token steps, a reused prefix's remainder) gives each row
    /// the bits the whole prompt in one call gives it. Without this, a last piece of a few tokens
    /// took the arithmetic of a short call (seen: a 70-token Q5_K prompt's first answer token
    /// 0.0045 off llama.cpp's log-probability, its runner-up 0.058, against 1e-5 at 64 and 72).
    public func forward(
        prompt tokens: ArraySlice<Int32>, of promptLength: Int, cache: KVCache,
        logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard !tokens.isEmpty else { return }
        try validate(tokens: tokens, cache: cache, logits: logits)
        guard tokens.startIndex >= 0, tokens.endIndex <= promptLength else {
            throw ModelError.invalidHyperParameter("a prompt piece lies outside its prompt")
        }
        lock.lock()
        defer { lock.unlock() }
        forwardLocked(tokens: tokens, origin: 0, promptLength: promptLength, cache: cache, logits: logits)
    }

    /// The end of the chunk that starts at `start` of a call whose first token is at `origin`:
    /// chunks are cut at multiples of `maxBatch` from the call's start, so they never cross a
    /// micro-batch (`maxBatch` divides `microBatchLimit`) and a piece that starts on a multiple
    /// is cut where the whole call would be.
    static func chunkEnd(from start: Int, origin: Int, limit: Int) -> Int {
        min(limit, origin + ((start - origin) / maxBatch + 1) * maxBatch)
    }

    /// `forward` in chunks, with the lock held and the input validated. Token `i` is at position
    /// `i - origin` of a call of `promptLength` tokens.
    private func forwardLocked(
        tokens: ArraySlice<Int32>, origin: Int, promptLength: Int, cache: KVCache,
        logits: UnsafeMutableBufferPointer<Float>
    ) {
        var start = tokens.startIndex
        while start < tokens.endIndex {
            let end = Self.chunkEnd(from: start, origin: origin, limit: tokens.endIndex)
            let chunk = tokens[start..<end]
            let segment = Segment(
                tokens: chunk, cache: cache, logits: end == tokens.endIndex ? logits.baseAddress : nil, row: 0,
                position: start - origin, of: promptLength)
            withUnsafePointer(to: segment) { runChunk(UnsafeBufferPointer(start: $0, count: 1)) }
            cache.append(chunk)
            start = end
        }
    }

    /// Processes `tokens` like `forward` and writes the logits after every one of them into
    /// `rows` ([tokens.count × vocabularySize]), in chunks of `maxBatch`, with the arithmetic of
    /// one llama.cpp call given the whole prompt of `promptLength` tokens with every token an
    /// output (completions' `echo`). `tokens`' indices are their positions in that prompt.
    public func forward(
        scoring tokens: ArraySlice<Int32>, of promptLength: Int, cache: KVCache,
        rows: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard !tokens.isEmpty else { return }
        let v = config.vocabularySize
        let base = try validate(tokens: tokens, cache: cache, rows: rows)
        guard tokens.startIndex >= 0, tokens.endIndex <= promptLength else {
            throw ModelError.invalidHyperParameter("a scored piece lies outside its prompt")
        }
        lock.lock()
        defer { lock.unlock() }
        var start = tokens.startIndex
        while start < tokens.endIndex {
            let end = Self.chunkEnd(from: start, origin: 0, limit: tokens.endIndex)
            let chunk = tokens[start..<end]
            let segment = Segment(
                tokens: chunk, cache: cache, logits: nil, row: 0, position: start, of: promptLength)
            withUnsafePointer(to: segment) {
                runChunk(UnsafeBufferPointer(start: $0, count: 1), scoring: base + (start - tokens.startIndex) * v)
            }
            cache.append(chunk)
            start = end
        }
    }

    /// Decode steps of `tokens` in one pass: appends them to the cache and writes the logits
    /// after every one of them into `rows` ([tokens.count × vocabularySize]), each row computed
    /// as `forward` computes a single decode step's, bit for bit (a micro-batch of one row each:
    /// decode product orders, decode attention kernels). Drafted tokens are verified so: the
    /// answer is the one decoding them one by one gives. At most `maxBatch` tokens.
    public func forward(
        decodeRows tokens: ArraySlice<Int32>, cache: KVCache, rows: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard !tokens.isEmpty else { return }
        let base = try validate(tokens: tokens, cache: cache, rows: rows)
        guard tokens.count <= Self.maxBatch else {
            throw ModelError.invalidHyperParameter("more decode rows than one pass holds")
        }
        lock.lock()
        defer { lock.unlock() }
        let segment = Segment(tokens: tokens, cache: cache, logits: nil, row: 0, position: 0, of: 1)
        withUnsafePointer(to: segment) { runChunk(UnsafeBufferPointer(start: $0, count: 1), scoring: base) }
        cache.append(tokens)
    }

    /// `validate` for a call that writes every row's logits: `rows` must hold them all. Its base.
    private func validate(
        tokens: ArraySlice<Int32>, cache: KVCache, rows: UnsafeMutableBufferPointer<Float>
    ) throws -> UnsafeMutablePointer<Float> {
        let v = config.vocabularySize
        try validate(tokens: tokens, cache: cache, logits: rows)
        guard rows.count >= tokens.count * v, let base = rows.baseAddress else {
            throw ModelError.logitsBufferTooSmall(count: rows.count, needed: tokens.count * v)
        }
        return base
    }

    /// Runs several sequences through one pass: their tokens share every weight read (the
    /// point of batching decode steps), while attention and the KV cache stay per sequence.
    /// Each sequence's result is bit-identical to running it alone. Items that do not fit one
    /// pass (more than `maxPassTokens` tokens together, or more than `maxSequencesPerBatch`
    /// sequences) are run in further passes. Throws before doing anything on a bad item.
    public func forward(batch items: [BatchItem]) throws {
        try forward(batch: items) { $0 }
    }

    /// `forward(batch:)` over any list that can present its elements as batch items (the
    /// predictor's inputs), so a decode round builds no array of its own.
    func forward<Items: RandomAccessCollection>(batch items: Items, as item: (Items.Element) -> BatchItem) throws
    where Items.Index == Int {
        for i in items.indices {
            let a = item(items[i])
            try validate(tokens: a.tokens, cache: a.cache, logits: a.logits)
            if a.promptLength > 0, a.tokens.startIndex < 0 || a.tokens.endIndex > a.promptLength {
                throw ModelError.invalidHyperParameter("a prompt piece lies outside its prompt")
            }
            for j in items.indices where j > i && item(items[j]).cache === a.cache {
                throw ModelError.invalidHyperParameter("a batch holds the same KV cache twice")
            }
        }
        lock.lock()
        defer { lock.unlock() }
        withUnsafeTemporaryAllocation(of: Segment.self, capacity: Self.maxSequencesPerBatch) { group in
            var next = items.startIndex
            while next < items.endIndex {
                // The items from `next` on that fit one pass, in order.
                var count = 0
                var rows = 0
                while next < items.endIndex, count < Self.maxSequencesPerBatch {
                    let a = item(items[next])
                    if a.tokens.isEmpty {
                        next += 1
                        continue
                    }
                    let (origin, length) =
                        a.promptLength > 0 ? (0, a.promptLength) : (a.tokens.startIndex, a.tokens.count)
                    let start = a.tokens.startIndex
                    if Self.chunkEnd(from: start, origin: origin, limit: a.tokens.endIndex) < a.tokens.endIndex {
                        guard count == 0 else { break }
                        // More than one chunk (a long prompt): it runs alone, in chunks.
                        forwardLocked(
                            tokens: a.tokens, origin: origin, promptLength: length, cache: a.cache, logits: a.logits)
                        next += 1
                        continue
                    }
                    guard rows + a.tokens.count <= Self.maxPassTokens else { break }
                    group.initializeElement(
                        at: count,
                        to: Segment(
                            tokens: a.tokens, cache: a.cache, logits: a.logits.baseAddress, row: rows,
                            position: start - origin, of: length))
                    count += 1
                    rows += a.tokens.count
                    next += 1
                }
                guard count > 0 else { continue }
                let segments = UnsafeMutableBufferPointer(rebasing: group[0..<count])
                runChunk(UnsafeBufferPointer(segments))
                for segment in segments { segment.cache.append(segment.tokens) }
                _ = segments.deinitialize()
            }
        }
    }
}
