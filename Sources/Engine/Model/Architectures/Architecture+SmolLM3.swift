extension Architecture {
    /// SmolLM3: the Llama layer (adjacent-pair RoPE, SwiGLU) with every fourth layer (3, 7, 11, …)
    /// attending without rotary positions, as llama.cpp's `smollm3` graph does (its step is fixed at
    /// 4, not read from the file). No `rope_freqs`: llama.cpp's graph passes no frequency factors.
    public static let smollm3 = Architecture(
        name: "smollm3", ropeStyle: .adjacentPairs, activation: .silu, attentionBiases: false, queryKeyNorms: false,
        postNorms: false, scalesEmbeddings: false, readsRopeFrequencyFactors: false, slidingWindowPattern: nil,
        slidingWindowRopeBase: nil, noRopeLayerStep: 4)
}
