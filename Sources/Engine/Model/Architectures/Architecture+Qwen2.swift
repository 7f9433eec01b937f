extension Architecture {
    /// Qwen 2 and 2.5: the Llama layer with biases on Q, K and V, and RoPE over halves.
    public static let qwen2 = Architecture(
        name: "qwen2", ropeStyle: .halves, activation: .silu, attentionBiases: true, queryKeyNorms: false,
        postNorms: false, scalesEmbeddings: false, readsRopeFrequencyFactors: false, slidingWindowPattern: nil,
        slidingWindowRopeBase: nil)
}
