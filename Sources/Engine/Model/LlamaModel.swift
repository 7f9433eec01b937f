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
    /// Tokens processed per internal step; longer inputs are split.
    public static let maxBatch = 64

    public let config: LlamaConfig
    public let threads: Int

    struct Layer {
        let attentionNorm: [Float]
        let wq: WeightMatrix
        let wk: WeightMatrix
        let wv: WeightMatrix
        let wo: WeightMatrix
        let ffnNorm: [Float]
        let gate: WeightMatrix
        let up: WeightMatrix
        let down: WeightMatrix
    }

    let gguf: GGUFFile  // keeps the mapping alive
    let tokenEmbedding: WeightMatrix
    let layers: [Layer]
    let outputNorm: [Float]
    let output: WeightMatrix
    let pool: ComputePool
    let lock = NSLock()

    // Scratch, [maxBatch × width] row-major.
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
    private var allocations: [UnsafeMutableRawPointer] = []

    public init(gguf: GGUFFile, threads: Int = ComputePool.defaultThreadCount) throws {
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
        self.layers = layers
        outputNorm = try VectorLoader.load(gguf: gguf, name: "output_norm.weight", count: dim)
        if gguf.tensors["output.weight"] != nil {
            output = try WeightMatrix(gguf: gguf, name: "output.weight", columns: dim, rows: config.vocabularySize)
        } else {
            output = tokenEmbedding
        }
        self.threads = max(1, threads)
        pool = ComputePool(threads: self.threads)

        var allocations: [UnsafeMutableRawPointer] = []
        func floats(_ count: Int) -> UnsafeMutablePointer<Float> {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: count)
            p.initialize(repeating: 0, count: count)
            allocations.append(UnsafeMutableRawPointer(p))
            return p
        }
        let b = Self.maxBatch
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
        attnScratchStride = 64 * config.headDim + config.contextLength + 32
        attnScratch = floats(self.threads * attnScratchStride)
        let maxColumns = max(dim, ffn)
        let qBytes = b * (maxColumns / 32 + 1) * MemoryLayout<ck_block_q8_1>.stride
        quantized = UnsafeMutableRawPointer.allocate(byteCount: qBytes, alignment: 64)
        allocations.append(quantized)
        self.allocations = allocations
    }

    deinit {
        for p in allocations { p.deallocate() }
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
        guard !tokens.isEmpty else { return }
        guard cache.layers == config.blockCount, cache.kvDim == config.kvDim else {
            throw ModelError.cacheFromAnotherModel
        }
        guard cache.count + tokens.count <= cache.capacity else {
            throw ModelError.cacheOverflow(count: cache.count, adding: tokens.count, capacity: cache.capacity)
        }
        guard logits.count >= config.vocabularySize, let logitsBase = logits.baseAddress else {
            throw ModelError.logitsBufferTooSmall(count: logits.count, needed: config.vocabularySize)
        }
        for t in tokens where t < 0 || Int(t) >= config.vocabularySize {
            throw ModelError.invalidToken(t, vocabularySize: config.vocabularySize)
        }
        lock.lock()
        defer { lock.unlock() }
        var start = 0
        while start < tokens.count {
            let end = min(tokens.count, start + Self.maxBatch)
            let chunk = tokens[start..<end]
            runChunk(chunk, cache: cache, logits: end == tokens.count ? logitsBase : nil)
            cache.append(chunk)
            start = end
        }
    }

    // MARK: - The pass

    private func runChunk(_ tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutablePointer<Float>?) {
        let c = config
        let n = tokens.count
        let dim = c.embeddingLength
        let kvDim = c.kvDim
        let ffn = c.feedForwardLength
        let pos0 = cache.count
        for (t, id) in tokens.enumerated() {
            tokenEmbedding.dequantizeRow(Int(id), into: x + t * dim)
        }
        for (l, layer) in layers.enumerated() {
            // Attention block
            rmsNorm(x, layer.attentionNorm, into: xn, n: n, width: dim)
            var activations = PreparedActivations(source: xn, n: n, columns: dim)
            matmul(layer.wq, &activations, into: q, ldy: dim)
            matmul(layer.wk, &activations, into: k, ldy: kvDim)
            matmul(layer.wv, &activations, into: v, ldy: kvDim)
            let kCache = cache.keys(layer: l)
            let vCache = cache.values(layer: l)
            for t in 0..<n {
                let pos = pos0 + t
                ck_rope(
                    q + t * dim, Int32(c.headCount), Int32(c.headDim), Int32(c.ropeDimensionCount), Int32(pos),
                    c.ropeFreqBase)
                ck_rope(
                    k + t * kvDim, Int32(c.headCountKV), Int32(c.headDim), Int32(c.ropeDimensionCount), Int32(pos),
                    c.ropeFreqBase)
                ck_fp32_to_fp16_row(k + t * kvDim, kCache + pos * kvDim, kvDim)
                ck_fp32_to_fp16_row(v + t * kvDim, vCache + pos * kvDim, kvDim)
            }
            var args = ck_attention_args(
                q: q, q_stride: Int32(dim), k_cache: kCache, v_cache: vCache, kv_stride: Int32(kvDim),
                n_head: Int32(c.headCount), n_kv_head: Int32(c.headCountKV), head_dim: Int32(c.headDim),
                n_tokens: Int32(n), pos0: Int32(pos0), scale: 1 / Float(c.headDim).squareRoot(),
                out: attn, out_stride: Int32(dim), scratch: attnScratch, scratch_stride: Int32(attnScratchStride))
            ck_attention(pool.raw, &args)
            var attnActivations = PreparedActivations(source: attn, n: n, columns: dim)
            matmul(layer.wo, &attnActivations, into: proj, ldy: dim)
            ck_add(x, proj, Int32(n * dim))

            // Feed-forward block
            rmsNorm(x, layer.ffnNorm, into: xn, n: n, width: dim)
            var ffnActivations = PreparedActivations(source: xn, n: n, columns: dim)
            matmul(layer.gate, &ffnActivations, into: gateOut, ldy: ffn)
            matmul(layer.up, &ffnActivations, into: upOut, ldy: ffn)
            ck_silu_mul(gateOut, upOut, act, Int32(n * ffn))
            var downActivations = PreparedActivations(source: act, n: n, columns: ffn)
            matmul(layer.down, &downActivations, into: proj, ldy: dim)
            ck_add(x, proj, Int32(n * dim))
        }
        guard let logits else { return }
        let last = x + (n - 1) * dim
        ck_rmsnorm(last, outputNorm, xn, Int32(dim), c.rmsNormEpsilon)
        var outActivations = PreparedActivations(source: xn, n: 1, columns: dim)
        matmul(output, &outActivations, into: logits, ldy: c.vocabularySize)
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
        var args = ck_matmul_args(
            type: w.kernelType, w: w.data, w_row_bytes: w.rowBytes, rows: Int32(w.rows), k: Int32(w.columns),
            x: xPointer, x_row_bytes: xRowBytes, n: Int32(a.n), y: y, ldy: Int32(ldy))
        ck_matmul(pool.raw, &args)
    }
}
