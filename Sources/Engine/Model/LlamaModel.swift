import CKernels
import Foundation

/// A decoder-only transformer of one of the supported families (`Architecture`: Llama, Qwen 2,
/// Qwen 3, Qwen 3 MoE, Gemma 3, SmolLM3, Phi-3, Mistral 3, gpt-oss) whose weights stay in the
/// mapped GGUF file.
///
/// Numerics follow llama.cpp on CPU: activations are quantized into the form each weight type's
/// dot product takes (Q8_0, Q8_1 or Q8_K: `GGMLType.activationForm`) before each matrix product,
/// K and V are stored as f16, the query and the attention weights are rounded to f16 for the two
/// attention products.
///
/// `forward` is synchronous and serialized: it runs on the caller's thread plus the model's
/// compute pool, and uses scratch buffers allocated once at load time.
public final class LlamaModel: @unchecked Sendable {
    /// Tokens of one sequence processed per internal step; longer inputs are split at multiples
    /// of it (the split changes the rounding, so it is fixed, whatever else shares the pass).
    public static let maxBatch = 64
    /// Rows from which llama.cpp's CPU flash attention tiles a micro-batch (its GGML_FA_TILE_Q).
    static let flashAttentionTileRows = 64
    /// llama.cpp's micro-batch (n_ubatch, 512 by default): a piece of more tokens runs as
    /// several, each with the arithmetic of its own size.
    static let microBatchLimit = 512
    /// Tokens in one pass over the weights: one sequence's full step plus one token each for the
    /// other sequences of a batch (a prompt chunk and the running streams' next tokens).
    public static let maxPassTokens = maxBatch + maxSequencesPerBatch

    public let config: ModelConfig
    public let threads: Int
    /// How the caches of `makeCache` store keys and values.
    public let kvCacheType: KVCacheType

    struct Layer {
        /// Every weight matrix of the layer (the experts' among them).
        var matrices: [WeightMatrix] { [wq, wk, wv, wo] + feedForward.matrices }

        /// Runs `body` on every weight matrix of the layer in place (the load's copies);
        /// on the experts' own matrices only when `experts`.
        mutating func updateMatrices(experts: Bool = true, _ body: (inout WeightMatrix) -> Void) {
            body(&wq)
            body(&wk)
            body(&wv)
            body(&wo)
            feedForward.updateMatrices(experts: experts, body)
        }

        let attentionNorm: [Float]
        var wq: WeightMatrix
        var wk: WeightMatrix
        var wv: WeightMatrix
        /// Biases of the three projections (`Architecture.attentionBiases`).
        let qBias: [Float]?
        let kBias: [Float]?
        let vBias: [Float]?
        /// Per-head RMSNorm weights on Q and K (`Architecture.queryKeyNorms`), headDim each.
        let qNorm: [Float]?
        let kNorm: [Float]?
        var wo: WeightMatrix
        /// The output projection's bias (`Architecture.outputBias`).
        let oBias: [Float]?
        /// One sink logit per query head (`Architecture.attentionSinks`).
        let sinks: [Float]?
        /// RMSNorm on the attention output before the residual add (`Architecture.postNorms`).
        let postAttentionNorm: [Float]?
        let ffnNorm: [Float]
        var feedForward: FeedForward
        /// RMSNorm on the feed-forward output before the residual add (`Architecture.postNorms`).
        let postFFNNorm: [Float]?
        /// Positions this layer attends to (its own included), 0 for all of them.
        let window: Int
        let ropeBase: Float
    }

    /// The file's bytes, which the token embedding (and any matrix left without a copy) is read
    /// from; the parsed metadata is not kept.
    let fileMapping: GGUFMapping
    let tokenEmbedding: TokenEmbedding
    let layers: [Layer]
    let outputNorm: [Float]
    let output: WeightMatrix
    /// Per-pair RoPE frequency divisors (`rope_freqs.weight`), when the file has them.
    let ropeFrequencyFactors: [Float]?
    /// Copies of the weight matrices, interleaved or verbatim (nil when none was made: see
    /// `weightCopies`).
    private let weightCopyBuffer: WeightCopyBuffer?
    /// Which matrices were copied: all, unless the copies would pass half the physical memory
    /// (`WeightCopier.plan`).
    public let weightCopies: WeightResidency.Copies
    /// Bytes of the copies (anonymous memory; their buffer adds under 4 KiB per matrix so that
    /// each starts at `WeightCopier.pageOffset`).
    public var copiedWeightBytes: Int {
        let copied = { (matrix: WeightMatrix) in matrix.isCopied ? matrix.copyByteCount : 0 }
        return layers.reduce(copied(output)) { total, layer in layer.matrices.reduce(total) { $0 + copied($1) } }
    }
    let pool: ComputePool
    /// True when some matrix has a weight type with llama.cpp's batch-dependent product orders
    /// (the K-quants), so a row's products depend on its place in its micro-batch. Decided once
    /// from the file's types (the prefix cache asks at every request).
    let hasBatchOrders: Bool
    let lock = NSLock()

    // Scratch, [maxPassTokens × width] row-major.
    let x: UnsafeMutablePointer<Float>
    let xn: UnsafeMutablePointer<Float>
    let q: UnsafeMutablePointer<Float>
    let k: UnsafeMutablePointer<Float>
    let v: UnsafeMutablePointer<Float>
    let attn: UnsafeMutablePointer<Float>
    let proj: UnsafeMutablePointer<Float>
    let gateOut: UnsafeMutablePointer<Float>
    let upOut: UnsafeMutablePointer<Float>
    let act: UnsafeMutablePointer<Float>
    let attnScratch: UnsafeMutablePointer<Float>
    let attnScratchStride: Int
    /// With a q8_0 cache: one sequence's keys and values widened to f16 for a prompt chunk's
    /// attention, `contextLength` positions each (pages untouched until a prompt reaches them).
    let kvStage: (keys: UnsafeMutablePointer<UInt16>, values: UnsafeMutablePointer<UInt16>)?
    let quantized: UnsafeMutableRawPointer
    /// Logits of several sequences' last tokens, [maxSequencesPerBatch × vocabularySize].
    let batchLogits: UnsafeMutablePointer<Float>
    /// [3 × maxPassTokens]: each row's CK_ORDER_* flags in a pass, then as many zeros (rows alone),
    /// then the last layer's feed-forward orders (the rows wanting logits alone).
    let rowOrders: UnsafeMutablePointer<UInt8>
    /// The mixture-of-experts step's buffers (nil for a dense model).
    let expertScratch: ExpertScratch?
    /// Where each pass writes its tensors (`INFERD_DUMP_TENSORS`), or nil.
    /// (Settable so a test can read one pass's tensors.)
    var tensorDumpDirectory: String? = LlamaModel.tensorDumpDirectoryFromEnvironment()
    private var allocations: [UnsafeMutableRawPointer] = []

    /// Most sequences one batched pass takes (their tokens together at most `maxPassTokens`).
    public static let maxSequencesPerBatch = 16

    /// - Parameter copyWeights: copy the weight matrices into anonymous memory, quantized ones
    ///   into the interleaved forms their fastest kernels read where the CPU has those kernels
    ///   (`WeightCopier`). Off only to compare speeds.
    /// - Parameter contextLimit: the most tokens a sequence may hold (the `context_length`
    ///   setting); nil keeps the context the model was trained for.
    /// - Parameter kvCacheType: how the caches this model makes store keys and values.
    /// - Parameter sharedPool: another model's compute pool, for a model that only ever runs
    ///   between that one's passes (a draft model); nil makes its own of `threads`.
    /// - Parameter physicalMemory: the machine's memory in bytes; the copies may take
    ///   half of it, beyond which the experts' matrices (then all) are read from the mapping.
    public init(
        gguf: GGUFFile, threads: Int = ComputePool.defaultThreadCount, copyWeights: Bool = true,
        contextLimit: Int? = nil, kvCacheType: KVCacheType = .f16, sharing sharedPool: ComputePool? = nil,
        physicalMemory: Int = LlamaModel.physicalMemoryBytes
    ) throws {
        let config = try ModelConfig(gguf: gguf, contextLimit: contextLimit)
        let arch = config.architecture
        try Self.refuseUnsupportedParts(gguf, config: config)
        if kvCacheType == .q8_0 && (config.headDim % 32 != 0 || config.headDim > 256 || config.kvDim > 4096) {
            throw ModelError.unsupportedKVCacheType(
                kvCacheType.rawValue,
                reason:
                    "needs a head size that is a multiple of 32 up to 256 and at most 4096 key values per token, not \(config.headCountKV) heads of \(config.headDim)"
            )
        }
        self.kvCacheType = kvCacheType
        self.config = config
        self.fileMapping = gguf.mapping
        let dim = config.embeddingLength
        let qDim = config.queryDim
        let kvDim = config.kvDim
        let ffn = config.feedForwardLength
        let embedding = try WeightMatrix(
            gguf: gguf, name: "token_embd.weight", columns: dim, rows: config.vocabularySize)
        tokenEmbedding = TokenEmbedding(matrix: embedding, file: gguf.mapping)
        var layers: [Layer] = []
        for i in 0..<config.blockCount {
            let p = "blk.\(i)."
            func matrix(_ name: String, _ columns: Int, _ rows: Int) throws -> WeightMatrix {
                try WeightMatrix(gguf: gguf, name: p + name + ".weight", columns: columns, rows: rows)
            }
            func vector(_ name: String, _ count: Int, if present: Bool = true) throws -> [Float]? {
                present ? try VectorLoader.load(gguf: gguf, name: p + name, count: count) : nil
            }
            func feedForward() throws -> FeedForward {
                if let gating = arch.expertGating, let experts = config.experts {
                    return .experts(
                        try ExpertFeedForward(
                            gguf: gguf, prefix: p, width: dim, experts: experts, gating: gating,
                            withBiases: arch.expertBiases))
                }
                let gateUp = try Self.gateAndUp(gguf, layer: i, dim: dim, ffn: ffn, fused: arch.fusedGateUp)
                return .dense(gate: gateUp.gate, up: gateUp.up, down: try matrix("ffn_down", ffn, dim))
            }
            let sliding = arch.isSlidingWindowLayer(i) && config.slidingWindow > 0
            let qkv = try Self.attentionProjections(gguf, layer: i, dim: dim, qDim: qDim, kvDim: kvDim)
            layers.append(
                Layer(
                    attentionNorm: try VectorLoader.load(gguf: gguf, name: p + "attn_norm.weight", count: dim),
                    wq: qkv.q, wk: qkv.k, wv: qkv.v,
                    qBias: try vector("attn_q.bias", qDim, if: arch.attentionBiases),
                    kBias: try vector("attn_k.bias", kvDim, if: arch.attentionBiases),
                    vBias: try vector("attn_v.bias", kvDim, if: arch.attentionBiases),
                    qNorm: try vector("attn_q_norm.weight", config.headDim, if: arch.queryKeyNorms),
                    kNorm: try vector("attn_k_norm.weight", config.headDim, if: arch.queryKeyNorms),
                    wo: try matrix("attn_output", qDim, dim),
                    oBias: try vector("attn_output.bias", dim, if: arch.outputBias),
                    sinks: try vector("attn_sinks.weight", config.headCount, if: arch.attentionSinks),
                    postAttentionNorm: try vector("post_attention_norm.weight", dim, if: arch.postNorms),
                    ffnNorm: try VectorLoader.load(
                        gguf: gguf, name: p + arch.feedForwardNormTensor + ".weight", count: dim),
                    feedForward: try feedForward(),
                    postFFNNorm: try vector("post_ffw_norm.weight", dim, if: arch.postNorms),
                    window: sliding ? config.slidingWindow : 0,
                    ropeBase: sliding ? arch.slidingWindowRopeBase ?? config.ropeFreqBase : config.ropeFreqBase))
        }
        outputNorm = try VectorLoader.load(gguf: gguf, name: "output_norm.weight", count: dim)
        ropeFrequencyFactors = try Self.ropeFrequencyFactors(gguf, config: config)
        var output: WeightMatrix
        if gguf.tensors["output.weight"] != nil {
            output = try WeightMatrix(gguf: gguf, name: "output.weight", columns: dim, rows: config.vocabularySize)
        } else {
            output = embedding
        }
        let copies =
            copyWeights && WeightCopier.enabledByEnvironment
            ? WeightCopier.plan(layers: layers, output: output, budget: physicalMemory / 2) : .none
        weightCopies = copies
        weightCopyBuffer = WeightCopier.copy(layers: &layers, output: &output, copies: copies)
        self.layers = layers
        self.output = output
        let kQuants: Set<GGMLType> = [.q2_K, .q3_K, .q4_K, .q5_K, .q6_K]
        let types = Set(layers.flatMap { $0.matrices.map(\.type) } + [output.type])
        hasBatchOrders = types.contains { kQuants.contains($0) }
        self.threads = max(1, threads)
        // A draft model runs between its target's passes on the same thread, never beside them:
        // it takes the target's pool, whose workers would otherwise spin against its own.
        pool = sharedPool ?? ComputePool(threads: self.threads)

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
        q = floats(b * qDim)
        k = floats(b * kvDim)
        v = floats(b * kvDim)
        attn = floats(b * qDim)
        proj = floats(b * dim)
        gateOut = floats(b * ffn)
        upOut = floats(b * ffn)
        act = floats(b * ffn)
        expertScratch = config.experts.map {
            ExpertScratch(rows: b, experts: $0.count, used: $0.used, width: dim, expertWidth: $0.feedForwardLength)
        }
        // Per thread: a prompt tile's queries, scores and weights over the whole context, or a
        // decode unit's lane sums (ckernels.h). Not zero-filled: the kernels write before they
        // read, and a short context leaves most of a long one's pages untouched and not resident.
        attnScratchStride = ck_attention_scratch_floats(
            Int32(config.headCount), Int32(config.headCountKV), Int32(config.headDim), Int32(config.contextLength))
        attnScratch = .allocate(capacity: self.threads * attnScratchStride)
        allocations.append(UnsafeMutableRawPointer(attnScratch))
        if kvCacheType == .q8_0 {
            let stage = UnsafeMutablePointer<UInt16>.allocate(capacity: 2 * config.contextLength * kvDim)
            allocations.append(UnsafeMutableRawPointer(stage))
            kvStage = (stage, stage + config.contextLength * kvDim)
        } else {
            kvStage = nil
        }
        let maxColumns = max(dim, ffn, qDim)
        let qBytes = b * GGMLType.activationScratchBytes(columns: maxColumns)
        quantized = UnsafeMutableRawPointer.allocate(byteCount: qBytes, alignment: 64)
        allocations.append(quantized)
        // Not zero-filled: every row is written before it is read, and untouched pages of a large
        // allocation stay out of resident memory (16 rows × 262,144 logits are 16 MiB for Gemma 3,
        // of which a pass with k sequences wanting logits touches k rows).
        batchLogits = .allocate(capacity: Self.maxSequencesPerBatch * config.vocabularySize)
        allocations.append(UnsafeMutableRawPointer(batchLogits))
        rowOrders = .allocate(capacity: 3 * Self.maxPassTokens)
        rowOrders.initialize(repeating: 0, count: 3 * Self.maxPassTokens)
        allocations.append(UnsafeMutableRawPointer(rowOrders))
        self.allocations = allocations
        // Everything is loaded: the pages read so far were metadata and copies' sources.
        fileMapping.releaseResidentPages()
    }

    deinit {
        for p in allocations { p.deallocate() }
    }

    /// Bytes of keys and values one token of a sequence holds, over all layers.
    public var kvBytesPerToken: Int { 2 * config.blockCount * kvCacheType.bytesPerPosition(kvDim: config.kvDim) }

    public func makeCache(capacity: Int) -> KVCache {
        KVCache(
            layers: config.blockCount, kvDim: config.kvDim,
            capacity: max(1, min(capacity, config.contextLength)), type: kvCacheType)
    }

    func validate(
        tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        guard cache.layers == config.blockCount, cache.kvDim == config.kvDim,
            cache.type == kvCacheType
        else {
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
        /// The micro-batch llama.cpp would put these rows in: the call (a whole prompt, however
        /// it is fed here, or the tokens given at once) cut in pieces of `microBatchLimit`. Its size
        /// and this segment's first row in it decide which of llama.cpp's arithmetics each row
        /// follows (`rowOrder`, flash attention tiles), so that the chunks a long prompt is cut
        /// into here, and whatever shares a pass, change nothing.
        /// (16 bits each: a batched pass keeps its segments on the stack, 1 KiB at most.)
        private let microBatchSize: UInt16
        private let microBatchOffset: UInt16
        var microBatch: Int { Int(microBatchSize) }

        /// The rows of `tokens`, the first at `position` of a call of `length` tokens.
        init(
            tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutablePointer<Float>?, row: Int,
            position: Int, of length: Int
        ) {
            self.tokens = tokens
            self.cache = cache
            self.logits = logits
            self.row = row
            let first = position / LlamaModel.microBatchLimit * LlamaModel.microBatchLimit
            self.microBatchSize = UInt16(min(LlamaModel.microBatchLimit, length - first))
            self.microBatchOffset = UInt16(position - first)
        }

        /// CK_ORDER_* flags of row t of this segment (see ck_matmul_args.orders).
        func rowOrder(_ t: Int) -> UInt8 { Self.rowOrder(Int(microBatchOffset) + t, microBatch: microBatch) }

        /// CK_ORDER_* flags of row i of a micro-batch of `microBatch` rows.
        static func rowOrder(_ i: Int, microBatch: Int) -> UInt8 {
            var order: UInt8 = 0
            if i < microBatch - microBatch % 4 { order |= UInt8(CK_ORDER_GROUP4) }
            if microBatch >= 8 { order |= UInt8(CK_ORDER_TILED) }
            if microBatch >= 2 { order |= UInt8(CK_ORDER_BATCH) }
            return order
        }
    }
}
