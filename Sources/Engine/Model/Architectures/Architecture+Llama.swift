extension Architecture {
    /// Llama 1–3, SmolLM, Mistral (dense): RMSNorm, adjacent-pair RoPE (with Llama 3's frequency
    /// factors when the file carries `rope_freqs.weight`), grouped-query attention, SwiGLU.
    public static let llama = Architecture(
        name: "llama", ropeStyle: .adjacentPairs, activation: .silu, attentionBiases: false, queryKeyNorms: false,
        postNorms: false, scalesEmbeddings: false, readsRopeFrequencyFactors: true, slidingWindowPattern: nil,
        slidingWindowRopeBase: nil)
}
