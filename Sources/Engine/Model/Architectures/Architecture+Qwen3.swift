extension Architecture {
    /// Qwen 3 (dense): no biases, a per-head RMSNorm on Q and K before RoPE over halves; the head
    /// width comes from `qwen3.attention.key_length`, so the query may be wider than the model.
    public static let qwen3 = Architecture(
        name: "qwen3", ropeStyle: .halves, activation: .silu, attentionBiases: false, queryKeyNorms: true,
        postNorms: false, scalesEmbeddings: false, readsRopeFrequencyFactors: false, slidingWindowPattern: nil,
        slidingWindowRopeBase: nil)
}
