import CKernels
import Foundation

/// A `llama` architecture transformer whose weights stay in the mapped GGUF file.
///
/// Numerics follow llama.cpp on CPU: activations are quantized to Q8_1 (Q4_1 weights) or Q8_0
/// (Q8_0 weights) before each matrix product, K and V are stored as f16, the query and the
/// attention weights are rounded to f16 for the two attention products.
///
/// `forward` is synchronous and serialized: it runs on the caller's thread plus the model's
/// compute pool, and uses scratch buffers allocated once at load time.
public final class LlamaModel: @unchecked Sendable {
    /// Tokens of one sequence processed per internal step; longer inputs are split at multiples
    /// of it (the split changes the rounding, so it is fixed, whatever else shares the pass).
    public static let maxBatch = 64
    /// Tokens in one pass over the weights: one sequence's full step plus one token each for the
    /// other sequences of a batch (a prompt chunk and the running streams' next tokens).
    public static let maxPassTokens = maxBatch + maxSequencesPerBatch

    public let config: LlamaConfig
    public let threads: Int

    struct Layer {
        var matrices: [WritableKeyPath<Layer, WeightMatrix>] { [\.wq, \.wk, \.wv, \.wo, \.gate, \.up, \.down] }

        let attentionNorm: [Float]
        var wq: WeightMatrix
        var wk: WeightMatrix
        var wv: WeightMatrix
        var wo: WeightMatrix
        let ffnNorm: [Float]
        var gate: WeightMatrix
        var up: WeightMatrix
        var down: WeightMatrix
    }

    let gguf: GGUFFile  // keeps the mapping alive
    let tokenEmbedding: WeightMatrix
    let layers: [Layer]
    let outputNorm: [Float]
    let output: WeightMatrix
    /// Interleaved copies of the weight matrices (nil when the CPU does not use them).
    private let interleavedWeights: UnsafeMutableRawBufferPointer?
    let pool: ComputePool
    let lock = NSLock()

    // Scratch, [maxPassTokens × width] row-major.
    private let x: UnsafeMutablePointer<Float>
    private let xn: UnsafeMutablePointer<Float>
    private let q: UnsafeMutablePointer<Float>
    private let k: UnsafeMutablePointer<Float>
    private let v: UnsafeMutablePointer<Float>
    private let attn: UnsafeMutablePointer<Float>
    private let proj: UnsafeMutablePointer<Float>
    private let gateOut: UnsafeMutablePointer<Float>
    private let upOut: UnsafeMutablePointer<Float>
    private let act: UnsafeMutablePointer<Float>
    private let attnScratch: UnsafeMutablePointer<Float>
    private let attnScratchStride: Int
    private let quantized: UnsafeMutableRawPointer
    /// Logits of several sequences' last tokens, [maxSequencesPerBatch × vocabularySize].
    private let batchLogits: UnsafeMutablePointer<Float>
    private var allocations: [UnsafeMutableRawPointer] = []

    /// Most sequences one batched pass takes (their tokens together at most `maxPassTokens`).
    public static let maxSequencesPerBatch = 16

    /// - Parameter interleave: copy the quantized weights into the interleaved forms their
    ///   fastest kernels read (when the CPU has those kernels). Off only to compare speeds.
    public init(gguf: GGUFFile, threads: Int = ComputePool.defaultThreadCount, interleave: Bool = true) throws {
        let config = try LlamaConfig(gguf: gguf)
        self.config = config
        self.gguf = gguf
        let dim = config.embeddingLength
        let kvDim = config.kvDim
        let ffn = config.feedForwardLength
        tokenEmbedding = try WeightMatrix(
            gguf: gguf, name: "token_embd.weight", columns: dim, rows: config.vocabularySize)
        var layers: [Layer] = []
        for i in 0..<config.blockCount {
            let p = "blk.\(i)."
            func matrix(_ name: String, _ columns: Int, _ rows: Int) throws -> WeightMatrix {
                try WeightMatrix(gguf: gguf, name: p + name + ".weight", columns: columns, rows: rows)
            }
            layers.append(
                Layer(
                    attentionNorm: try VectorLoader.load(gguf: gguf, name: p + "attn_norm.weight", count: dim),
                    wq: try matrix("attn_q", dim, dim),
                    wk: try matrix("attn_k", dim, kvDim),
                    wv: try matrix("attn_v", dim, kvDim),
                    wo: try matrix("attn_output", dim, dim),
                    ffnNorm: try VectorLoader.load(gguf: gguf, name: p + "ffn_norm.weight", count: dim),
                    gate: try matrix("ffn_gate", dim, ffn),
                    up: try matrix("ffn_up", dim, ffn),
                    down: try matrix("ffn_down", ffn, dim)))
        }
        outputNorm = try VectorLoader.load(gguf: gguf, name: "output_norm.weight", count: dim)
        var output: WeightMatrix
        if gguf.tensors["output.weight"] != nil {
            output = try WeightMatrix(gguf: gguf, name: "output.weight", columns: dim, rows: config.vocabularySize)
        } else {
            output = tokenEmbedding
        }
        interleavedWeights =
            interleave && WeightInterleaver.enabledByEnvironment
            ? WeightInterleaver.interleave(layers: &layers, output: &output) : nil
        self.layers = layers
        self.output = output
        self.threads = max(1, threads)
        pool = ComputePool(threads: self.threads)

        var allocations: [UnsafeMutableRawPointer] = []
        func floats(_ count: Int) -> UnsafeMutablePointer<Float> {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: count)
            p.initialize(repeating: 0, count: count)
            allocations.append(UnsafeMutableRawPointer(p))
            return p
        }
        let b = Self.maxPassTokens
        x = floats(b * dim)
        xn = floats(b * dim)
        q = floats(b * dim)
        k = floats(b * kvDim)
        v = floats(b * kvDim)
        attn = floats(b * dim)
        proj = floats(b * dim)
        gateOut = floats(b * ffn)
        upOut = floats(b * ffn)
        act = floats(b * ffn)
        // An attention unit does the query heads of one KV head together: per head, 64 lane sums
        // of headDim floats and a row of scores (ckernels.h).
        attnScratchStride = config.headCount / config.headCountKV * (64 * config.headDim + config.contextLength + 32)
        attnScratch = floats(self.threads * attnScratchStride)
        let maxColumns = max(dim, ffn)
        let qBytes = b * (maxColumns / 32 + 1) * MemoryLayout<ck_block_q8_1>.stride
        quantized = UnsafeMutableRawPointer.allocate(byteCount: qBytes, alignment: 64)
        allocations.append(quantized)
        batchLogits = floats(Self.maxSequencesPerBatch * config.vocabularySize)
        self.allocations = allocations
    }

    deinit {
        for p in allocations { p.deallocate() }
        interleavedWeights?.deallocate()
    }

    public func makeCache(capacity: Int) -> KVCache {
        KVCache(
            layers: config.blockCount, kvDim: config.kvDim,
            capacity: max(1, min(capacity, config.contextLength)))
    }

    /// Processes `tokens` at positions `cache.count ..< cache.count + tokens.count`, appends their
    /// keys and values to the cache, and writes the logits of the last token into `logits`
    /// (`vocabularySize` floats). Throws before doing anything when the cache would overflow.
    public func forward(tokens: [Int32], cache: KVCache, logits: UnsafeMutableBufferPointer<Float>) throws {
        try forward(tokens: tokens[...], cache: cache, logits: logits)
    }

    /// The same for a slice (a decode step passes the last token of its history, allocating nothing).
    public func forward(tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutableBufferPointer<Float>) throws {
        guard !tokens.isEmpty else { return }
        try validate(tokens: tokens, cache: cache, logits: logits)
        lock.lock()
        defer { lock.unlock() }
        forwardLocked(tokens: tokens, cache: cache, logits: logits)
    }

    /// `forward` in chunks of `maxBatch`, with the lock held and the input validated.
    private func forwardLocked(tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutableBufferPointer<Float>) {
        var start = tokens.startIndex
        while start < tokens.endIndex {
            let end = min(tokens.endIndex, start + Self.maxBatch)
            let chunk = tokens[start..<end]
            let segment = Segment(
                tokens: chunk, cache: cache, logits: end == tokens.endIndex ? logits.baseAddress : nil, row: 0)
            withUnsafePointer(to: segment) { runChunk(UnsafeBufferPointer(start: $0, count: 1)) }
            cache.append(chunk)
            start = end
        }
    }

    /// One sequence's part of a batched pass.
    public struct BatchItem {
        public var tokens: ArraySlice<Int32>
        public var cache: KVCache
        public var logits: UnsafeMutableBufferPointer<Float>

        public init(tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutableBufferPointer<Float>) {
            self.tokens = tokens
            self.cache = cache
            self.logits = logits
        }
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
                    if a.tokens.count > Self.maxBatch {
                        guard count == 0 else { break }
                        // One long prompt: it runs alone, in chunks.
                        forwardLocked(tokens: a.tokens, cache: a.cache, logits: a.logits)
                        next += 1
                        continue
                    }
                    guard rows + a.tokens.count <= Self.maxPassTokens else { break }
                    group.initializeElement(
                        at: count,
                        to: Segment(tokens: a.tokens, cache: a.cache, logits: a.logits.baseAddress, row: rows))
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

    private func validate(
        tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard cache.layers == config.blockCount, cache.kvDim == config.kvDim else {
            throw ModelError.cacheFromAnotherModel
        }
        guard cache.count + tokens.count <= cache.capacity else {
            throw ModelError.cacheOverflow(count: cache.count, adding: tokens.count, capacity: cache.capacity)
        }
        guard logits.count >= config.vocabularySize, logits.baseAddress != nil else {
            throw ModelError.logitsBufferTooSmall(count: logits.count, needed: config.vocabularySize)
        }
        for t in tokens where t < 0 || Int(t) >= config.vocabularySize {
            throw ModelError.invalidToken(t, vocabularySize: config.vocabularySize)
        }
    }

    /// Rows of one sequence inside a pass: its tokens, its cache, where its last logits go, and
    /// the pass row its first token takes.
    struct Segment {
        let tokens: ArraySlice<Int32>
        let cache: KVCache
        let logits: UnsafeMutablePointer<Float>?
        let row: Int
    }

    // MARK: - The pass

    /// One pass over the rows of `segments` (together at most `maxPassTokens` rows, each segment
    /// starting at its `row`). Weight products run once over all rows; RoPE positions, the KV
    /// cache and attention are per segment.
    private func runChunk(_ segments: UnsafeBufferPointer<Segment>) {
        let c = config
        let dim = c.embeddingLength
        let kvDim = c.kvDim
        let ffn = c.feedForwardLength
        // Rows in the pass. Shape of x, xn, q, attn, proj: [n × dim]; k, v: [n × kvDim].
        let n = segments.last.map { $0.row + $0.tokens.count } ?? 0
        for segment in segments {
            for (t, id) in segment.tokens.enumerated() {
                tokenEmbedding.dequantizeRow(Int(id), into: x + (segment.row + t) * dim)
            }
        }
        for (l, layer) in layers.enumerated() {
            // Attention block
            rmsNorm(x, layer.attentionNorm, into: xn, n: n, width: dim)
            var activations = PreparedActivations(source: xn, n: n, columns: dim)
            matmul(
                Product(weights: layer.wq, out: q, ldy: dim), Product(weights: layer.wk, out: k, ldy: kvDim),
                Product(weights: layer.wv, out: v, ldy: kvDim), activations: &activations)
            // RoPE and the new keys and values into each sequence's cache, then every sequence's
            // attention in one pool task.
            withUnsafeTemporaryAllocation(of: ck_attention_args.self, capacity: segments.count) { list in
                for (i, segment) in segments.enumerated() {
                    let offset = segment.row
                    let kCache = segment.cache.keys(layer: l)
                    let vCache = segment.cache.values(layer: l)
                    let pos0 = segment.cache.count
                    let rows = segment.tokens.count
                    for t in 0..<rows {
                        let pos = pos0 + t
                        let row = offset + t
                        ck_rope(
                            q + row * dim, Int32(c.headCount), Int32(c.headDim), Int32(c.ropeDimensionCount),
                            Int32(pos), c.ropeFreqBase)
                        ck_rope(
                            k + row * kvDim, Int32(c.headCountKV), Int32(c.headDim), Int32(c.ropeDimensionCount),
                            Int32(pos), c.ropeFreqBase)
                        ck_fp32_to_fp16_row(k + row * kvDim, kCache + pos * kvDim, kvDim)
                        ck_fp32_to_fp16_row(v + row * kvDim, vCache + pos * kvDim, kvDim)
                    }
                    list.initializeElement(
                        at: i,
                        to: ck_attention_args(
                            q: q + offset * dim, q_stride: Int32(dim), k_cache: kCache, v_cache: vCache,
                            kv_stride: Int32(kvDim), n_head: Int32(c.headCount), n_kv_head: Int32(c.headCountKV),
                            head_dim: Int32(c.headDim), n_tokens: Int32(rows), pos0: Int32(pos0),
                            scale: 1 / Float(c.headDim).squareRoot(), out: attn + offset * dim,
                            out_stride: Int32(dim), scratch: attnScratch, scratch_stride: Int32(attnScratchStride)))
                }
                ck_attention_many(pool.raw, list.baseAddress!, Int32(segments.count))
            }
            var attnActivations = PreparedActivations(source: attn, n: n, columns: dim)
            matmul(layer.wo, &attnActivations, into: proj, ldy: dim)
            ck_add(x, proj, Int32(n * dim))

            // Feed-forward block
            rmsNorm(x, layer.ffnNorm, into: xn, n: n, width: dim)
            var ffnActivations = PreparedActivations(source: xn, n: n, columns: dim)
            matmul(
                Product(weights: layer.gate, out: gateOut, ldy: ffn), Product(weights: layer.up, out: upOut, ldy: ffn),
                activations: &ffnActivations)
            ck_silu_mul(gateOut, upOut, act, Int32(n * ffn))
            var downActivations = PreparedActivations(source: act, n: n, columns: ffn)
            matmul(layer.down, &downActivations, into: proj, ldy: dim)
            ck_add(x, proj, Int32(n * dim))
        }
        // Output head over the last row of each segment that wants logits, in one product.
        var wanting = 0
        var only: UnsafeMutablePointer<Float>? = nil
        for segment in segments {
            guard let logits = segment.logits else { continue }
            let last = x + (segment.row + segment.tokens.count - 1) * dim
            ck_rmsnorm(last, outputNorm, xn + wanting * dim, Int32(dim), c.rmsNormEpsilon)
            wanting += 1
            only = logits
        }
        guard wanting > 0, let only else { return }
        var outActivations = PreparedActivations(source: xn, n: wanting, columns: dim)
        if wanting == 1 {
            matmul(output, &outActivations, into: only, ldy: c.vocabularySize)
            return
        }
        matmul(output, &outActivations, into: batchLogits, ldy: c.vocabularySize)
        var i = 0
        for segment in segments {
            guard let logits = segment.logits else { continue }
            logits.update(from: batchLogits + i * c.vocabularySize, count: c.vocabularySize)
            i += 1
        }
    }

    private func rmsNorm(
        _ input: UnsafeMutablePointer<Float>, _ weight: [Float], into out: UnsafeMutablePointer<Float>, n: Int,
        width: Int
    ) {
        weight.withUnsafeBufferPointer { w in
            for t in 0..<n {
                ck_rmsnorm(input + t * width, w.baseAddress!, out + t * width, Int32(width), config.rmsNormEpsilon)
            }
        }
    }

    /// Activations in the form each weight type wants, quantized at most once per form.
    struct PreparedActivations {
        let source: UnsafeMutablePointer<Float>
        let n: Int
        let columns: Int
        var form: GGMLType? = nil
    }

    private func matmul(
        _ w: WeightMatrix, _ a: inout PreparedActivations, into y: UnsafeMutablePointer<Float>, ldy: Int
    ) {
        var args = arguments(w, &a, into: y, ldy: ldy)
        ck_matmul(pool.raw, &args)
    }

    /// One product of a layer: weights, output rows, the output's row stride.
    struct Product {
        let weights: WeightMatrix
        let out: UnsafeMutablePointer<Float>
        let ldy: Int
    }

    /// Query, key and value (or any three products of the same activations) in one pool task.
    /// Not variadic: a variadic list is an array, made anew every call, in every layer.
    private func matmul(_ a: Product, _ b: Product, _ c: Product, activations: inout PreparedActivations) {
        withUnsafeTemporaryAllocation(of: Product.self, capacity: 3) { list in
            list.initializeElement(at: 0, to: a)
            list.initializeElement(at: 1, to: b)
            list.initializeElement(at: 2, to: c)
            matmul(UnsafeBufferPointer(list), activations: &activations)
            _ = list.deinitialize()
        }
    }

    /// Gate and up (or any two products of the same activations) in one pool task.
    private func matmul(_ a: Product, _ b: Product, activations: inout PreparedActivations) {
        withUnsafeTemporaryAllocation(of: Product.self, capacity: 2) { list in
            list.initializeElement(at: 0, to: a)
            list.initializeElement(at: 1, to: b)
            matmul(UnsafeBufferPointer(list), activations: &activations)
            _ = list.deinitialize()
        }
    }

    /// Several products of the same activations in one pool task (one wait instead of several).
    /// The activations have one quantized buffer, so matrices wanting different forms (mixed-type
    /// test models) run one after the other.
    private func matmul(_ products: UnsafeBufferPointer<Product>, activations a: inout PreparedActivations) {
        guard products.allSatisfy({ $0.weights.type == products[0].weights.type }) else {
            for p in products { matmul(p.weights, &a, into: p.out, ldy: p.ldy) }
            return
        }
        withUnsafeTemporaryAllocation(of: ck_matmul_args.self, capacity: products.count) { list in
            for (i, p) in products.enumerated() {
                list.initializeElement(at: i, to: arguments(p.weights, &a, into: p.out, ldy: p.ldy))
            }
            ck_matmul_many(pool.raw, list.baseAddress!, Int32(products.count))
        }
    }

    /// The kernel's arguments for `w × a`, quantizing `a` into the form `w` wants if needed.
    private func arguments(
        _ w: WeightMatrix, _ a: inout PreparedActivations, into y: UnsafeMutablePointer<Float>, ldy: Int
    ) -> ck_matmul_args {
        let xPointer: UnsafeRawPointer
        let xRowBytes: Int
        switch w.type {
        case .q4_1:
            xRowBytes = a.columns / 32 * MemoryLayout<ck_block_q8_1>.stride
            if a.form != .q8_1 {
                for t in 0..<a.n {
                    ck_quantize_row_q8_1(
                        a.source + t * a.columns,
                        (quantized + t * xRowBytes).assumingMemoryBound(to: ck_block_q8_1.self), Int32(a.columns))
                }
                a.form = .q8_1
            }
            xPointer = UnsafeRawPointer(quantized)
        case .q8_0:
            xRowBytes = a.columns / 32 * MemoryLayout<ck_block_q8_0>.stride
            if a.form != .q8_0 {
                for t in 0..<a.n {
                    ck_quantize_row_q8_0(
                        a.source + t * a.columns,
                        (quantized + t * xRowBytes).assumingMemoryBound(to: ck_block_q8_0.self), Int32(a.columns))
                }
                a.form = .q8_0
            }
            xPointer = UnsafeRawPointer(quantized)
        default:
            xRowBytes = a.columns * MemoryLayout<Float>.stride
            xPointer = UnsafeRawPointer(a.source)
        }
        return ck_matmul_args(
            type: w.productType, w: w.productData, w_row_bytes: w.productStride, rows: Int32(w.rows),
            k: Int32(w.columns), x: xPointer, x_row_bytes: xRowBytes, n: Int32(a.n), y: y, ldy: Int32(ldy))
    }
}
