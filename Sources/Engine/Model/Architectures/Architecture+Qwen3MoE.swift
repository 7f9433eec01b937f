extension Architecture {
    /// Qwen 3 MoE: the Qwen 3 layer (per-head Q/K norms, RoPE over halves, a head width from
    /// `key_length`) with a mixture of experts for the feed-forward: softmax over the router's
    /// logits, the top `expert_used_count` experts, their weights renormalised to sum to 1 (as
    /// llama.cpp's qwen3moe graph calls `build_moe_ffn`), SwiGLU in each expert.
    public static let qwen3moe = Architecture(
        name: "qwen3moe", ropeStyle: .halves, activation: .silu, attentionBiases: false, queryKeyNorms: true,
        postNorms: false, scalesEmbeddings: false, readsRopeFrequencyFactors: false, slidingWindowPattern: nil,
        slidingWindowRopeBase: nil, expertGating: ExpertGating(probabilities: .softmax, normalizesChosen: true))
}
