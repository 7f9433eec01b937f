/// Hyper-parameters of a model, read from GGUF metadata under its architecture's prefix
/// (`llama.`, `qwen2.`, …; the vocabulary size from the shape of `token_embd.weight`).
public struct ModelConfig: Sendable, Equatable {
    public var architecture: Architecture
    public var embeddingLength: Int
    public var blockCount: Int
    public var feedForwardLength: Int
    public var headCount: Int
    public var headCountKV: Int
    /// Width of one attention head (`attention.key_length`, else width / heads).
    public var headDim: Int
    public var ropeDimensionCount: Int
    public var ropeFreqBase: Float
    /// RoPE scaling's frequency factor (1 / `rope.scaling.factor` for `linear` and `yarn`):
    /// positions are multiplied by it.
    public var ropeFreqScale: Float { ropeScaling.freqScale }
    public var rmsNormEpsilon: Float
    /// The context the engine serves: the trained one, capped by the `context_length` setting.
    public var contextLength: Int
    /// The context the model was trained for (`{arch}.context_length`).
    public var trainedContextLength: Int
    public var vocabularySize: Int
    /// Positions a sliding-window layer attends to (its own included); 0 when none.
    public var slidingWindow: Int
    /// The factor on the query–key products.
    public var attentionScale: Float
    /// The mixture-of-experts feed-forward's sizes; nil for a dense one.
    public var experts: Experts?
    /// RoPE scaling (linear, YaRN, LongRoPE's attention factor) and the attention temperature
    /// (`RopeScaling`, read in `ModelConfig+RopeScaling.swift`).
    public var ropeScaling: RopeScaling

    /// Width of the query projection and of the attention output.
    public var queryDim: Int { headCount * headDim }
    /// Width of the K and V projections.
    public var kvDim: Int { headCountKV * headDim }

    /// - Parameter contextLimit: the most tokens a sequence may hold (the `context_length`
    ///   setting); nil keeps the trained context.
    public init(gguf: GGUFFile, contextLimit: Int? = nil) throws(ModelError) {
        let name = gguf.optionalString("general.architecture") ?? ""
        guard let architecture = Architecture.named(name) else { throw .unsupportedArchitecture(name) }
        self.architecture = architecture
        let prefix = name + "."
        func int(_ key: String) throws(ModelError) -> Int {
            guard let v = gguf.optionalInt(prefix + key) else { throw .missingMetadata(key: prefix + key) }
            return v
        }
        embeddingLength = try int("embedding_length")
        blockCount = try int("block_count")
        if architecture.expertGating != nil {
            // The layers have experts only; a dense width, where the file has one, is unused.
            let e = try Self.readExperts(
                gguf: gguf, prefix: prefix, denseWidth: gguf.optionalInt(prefix + "feed_forward_length"))
            experts = e
            feedForwardLength = e.feedForwardLength
        } else {
            experts = nil
            feedForwardLength = try int("feed_forward_length")
        }
        headCount = try int("attention.head_count")
        headCountKV = gguf.optionalInt(prefix + "attention.head_count_kv") ?? headCount
        trainedContextLength = try int("context_length")
        contextLength = min(trainedContextLength, max(1, contextLimit ?? trainedContextLength))
        ropeFreqBase = gguf.optionalFloat(prefix + "rope.freq_base") ?? 10000
        guard let eps = gguf.optionalFloat(prefix + "attention.layer_norm_rms_epsilon") else {
            throw .missingMetadata(key: prefix + "attention.layer_norm_rms_epsilon")
        }
        rmsNormEpsilon = eps
        guard headCount > 0, embeddingLength > 0 else {
            throw .invalidHyperParameter("embedding_length and head_count must be > 0")
        }
        if let keyLength = gguf.optionalInt(prefix + "attention.key_length") {
            headDim = keyLength
        } else {
            guard embeddingLength % headCount == 0 else {
                throw .invalidHyperParameter(
                    "embedding_length \(embeddingLength) not a multiple of head_count \(headCount)")
            }
            headDim = embeddingLength / headCount
        }
        if let valueLength = gguf.optionalInt(prefix + "attention.value_length"), valueLength != headDim {
            throw .invalidHyperParameter("attention.value_length \(valueLength) differs from key_length \(headDim)")
        }
        ropeDimensionCount = gguf.optionalInt(prefix + "rope.dimension_count") ?? headDim
        ropeScaling = RopeScaling()
        slidingWindow =
            architecture.slidingWindowPattern == nil ? 0 : gguf.optionalInt(prefix + "attention.sliding_window") ?? 0
        // Gemma 3 27B scales by the width per head rather than the head width (as llama.cpp does).
        let scaleWidth = architecture == .gemma3 && blockCount == 62 ? embeddingLength / headCount : headDim
        attentionScale = 1 / Float(scaleWidth).squareRoot()
        guard let embd = gguf.tensors["token_embd.weight"] else { throw .missingTensor("token_embd.weight") }
        guard embd.shape.count == 2 else {
            throw .wrongShape(tensor: "token_embd.weight", expected: [embeddingLength, -1], actual: embd.shape)
        }
        vocabularySize = embd.shape[1]
        try readRopeScaling(gguf, prefix: prefix)
        try validate()
    }

    func validate() throws(ModelError) {
        guard blockCount > 0, feedForwardLength > 0, contextLength > 0, vocabularySize > 0 else {
            throw .invalidHyperParameter("block_count, feed_forward_length, context_length and vocabulary must be > 0")
        }
        guard headCountKV > 0, headCount % headCountKV == 0 else {
            throw .invalidHyperParameter("head_count \(headCount) not a multiple of head_count_kv \(headCountKV)")
        }
        guard headDim > 0, headDim % 2 == 0, headDim <= 256 else {
            throw .invalidHyperParameter("head dimension \(headDim) must be even and at most 256")
        }
        guard ropeDimensionCount % 2 == 0, ropeDimensionCount > 0, ropeDimensionCount <= headDim else {
            throw .invalidHyperParameter("rope.dimension_count \(ropeDimensionCount) must be even and ≤ \(headDim)")
        }
        guard ropeFreqBase > 0, rmsNormEpsilon >= 0 else {
            throw .invalidHyperParameter("rope.freq_base must be > 0 and the RMS epsilon ≥ 0")
        }
        guard slidingWindow >= 0 else {
            throw .invalidHyperParameter("attention.sliding_window \(slidingWindow) must be ≥ 0")
        }
    }
}
