extension Architecture {
    /// Ministral 3 and Mistral's `mistral3` text models: the Llama layer (adjacent-pair RoPE with
    /// `rope_freqs` when present, SwiGLU) with YaRN RoPE scaling and Llama 4's attention
    /// temperature. Its mixture-of-experts form (`mistral3.expert_count`) and optional biases on the
    /// attention output and the feed-forward are refused at load.
    public static let mistral3 = Architecture(
        name: "mistral3", ropeStyle: .adjacentPairs, activation: .silu, attentionBiases: false, queryKeyNorms: false,
        postNorms: false, scalesEmbeddings: false, readsRopeFrequencyFactors: true, slidingWindowPattern: nil,
        slidingWindowRopeBase: nil, readsYarnTuningAndTemperature: true)
}
