extension Architecture {
    /// Gemma 3 (text): embeddings scaled by √width; per-head Q/K norms; RMSNorms before and after
    /// attention and the feed-forward; GELU-tanh gated feed-forward; five sliding-window layers
    /// (RoPE base 10,000) to every global one (`gemma3.rope.freq_base`), as llama.cpp sets it.
    /// The file's norm weights already include Gemma's "+1" (the converter adds it).
    public static let gemma3 = Architecture(
        name: "gemma3", ropeStyle: .halves, activation: .geluTanh, attentionBiases: false, queryKeyNorms: true,
        postNorms: true, scalesEmbeddings: true, readsRopeFrequencyFactors: false, slidingWindowPattern: 6,
        slidingWindowRopeBase: 10_000, flashAttentionRows: true)
}
