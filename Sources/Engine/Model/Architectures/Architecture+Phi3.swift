extension Architecture {
    /// Phi-3, Phi-3.5 and Phi-4 (dense): Q, K and V in one `attn_qkv.weight` (rows stacked), gate
    /// and up in one `ffn_up.weight`, RoPE over halves (over `rope.dimension_count` of each head,
    /// three quarters for Phi-4-mini), the query scaled before attention, LongRoPE factors for the
    /// 128k variants. The file's `sliding_window` is ignored, as llama.cpp ignores it for Phi-3.
    public static let phi3 = Architecture(
        name: "phi3", ropeStyle: .halves, activation: .silu, attentionBiases: false, queryKeyNorms: false,
        postNorms: false, scalesEmbeddings: false, readsRopeFrequencyFactors: false, slidingWindowPattern: nil,
        slidingWindowRopeBase: nil, fusedGateUp: true, scalesQueryBeforeAttention: true, readsLongRopeFactors: true)
}
