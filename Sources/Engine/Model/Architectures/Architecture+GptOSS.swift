extension Architecture {
    /// gpt-oss (llama.cpp's `openai-moe`): Q/K/V and output biases, RoPE over halves with YaRN
    /// (from the file), one sink logit per query head, a sliding window on every even layer
    /// (llama.cpp's pattern 2: layer 0 slides, layer 1 attends globally, …), the feed-forward's
    /// RMSNorm in `post_attention_norm`, and a mixture of experts: the router's biased logits
    /// choose the top `expert_used_count`, the softmax of those logits weighs them (SOFTMAX_WEIGHT),
    /// each expert's products carry biases and its activation is the clamped `swiglu_oai`.
    public static let gptOSS = Architecture(
        name: "gpt-oss", ropeStyle: .halves, activation: .swigluOAI, attentionBiases: true, queryKeyNorms: false,
        postNorms: false, scalesEmbeddings: false, readsRopeFrequencyFactors: false, slidingWindowPattern: 2,
        slidingWindowRopeBase: nil,
        expertGating: ExpertGating(probabilities: .softmaxOfChosen, normalizesChosen: false), outputBias: true,
        attentionSinks: true, feedForwardNormTensor: "post_attention_norm", expertBiases: true)
}
