/// Hyper-parameters of a `llama` architecture model, all read from GGUF metadata
/// (the vocabulary size from the shape of `token_embd.weight`).
public struct LlamaConfig: Sendable, Equatable {
    public var embeddingLength: Int
    public var blockCount: Int
    public var feedForwardLength: Int
    public var headCount: Int
    public var headCountKV: Int
    public var headDim: Int
    public var ropeDimensionCount: Int
    public var ropeFreqBase: Float
    public var rmsNormEpsilon: Float
    public var contextLength: Int
    public var vocabularySize: Int

    /// Width of the K and V projections.
    public var kvDim: Int { headCountKV * headDim }

    public init(gguf: GGUFFile) throws(ModelError) {
        let arch = gguf.optionalString("general.architecture") ?? ""
        guard arch == "llama" else { throw .unsupportedArchitecture(arch) }
        func int(_ key: String) throws(ModelError) -> Int {
            guard let v = gguf.optionalInt("llama." + key) else { throw .missingMetadata(key: "llama." + key) }
            return v
        }
        embeddingLength = try int("embedding_length")
        blockCount = try int("block_count")
        feedForwardLength = try int("feed_forward_length")
        headCount = try int("attention.head_count")
        headCountKV = gguf.optionalInt("llama.attention.head_count_kv") ?? headCount
        contextLength = try int("context_length")
        ropeFreqBase = gguf.optionalFloat("llama.rope.freq_base") ?? 10000
        guard let eps = gguf.optionalFloat("llama.attention.layer_norm_rms_epsilon") else {
            throw .missingMetadata(key: "llama.attention.layer_norm_rms_epsilon")
        }
        rmsNormEpsilon = eps
        guard headCount > 0, embeddingLength > 0, embeddingLength % headCount == 0 else {
            throw .invalidHyperParameter(
                "embedding_length \(embeddingLength) not a multiple of head_count \(headCount)")
        }
        headDim = embeddingLength / headCount
        ropeDimensionCount = gguf.optionalInt("llama.rope.dimension_count") ?? headDim
        guard let embd = gguf.tensors["token_embd.weight"] else { throw .missingTensor("token_embd.weight") }
        guard embd.shape.count == 2 else {
            throw .wrongShape(tensor: "token_embd.weight", expected: [embeddingLength, -1], actual: embd.shape)
        }
        vocabularySize = embd.shape[1]
        try validate()
    }

    func validate() throws(ModelError) {
        guard blockCount > 0, feedForwardLength > 0, contextLength > 0, vocabularySize > 0 else {
            throw .invalidHyperParameter("block_count, feed_forward_length, context_length and vocabulary must be > 0")
        }
        guard headCountKV > 0, headCount % headCountKV == 0 else {
            throw .invalidHyperParameter("head_count \(headCount) not a multiple of head_count_kv \(headCountKV)")
        }
        guard headDim % 2 == 0, headDim <= 256 else {
            throw .invalidHyperParameter("head dimension \(headDim) must be even and at most 256")
        }
        guard ropeDimensionCount % 2 == 0, ropeDimensionCount > 0, ropeDimensionCount <= headDim else {
            throw .invalidHyperParameter("rope.dimension_count \(ropeDimensionCount) must be even and ≤ \(headDim)")
        }
        guard ropeFreqBase > 0, rmsNormEpsilon >= 0 else {
            throw .invalidHyperParameter("rope.freq_base must be > 0 and the RMS epsilon ≥ 0")
        }
    }
}
