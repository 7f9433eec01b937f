/// What sets one decoder-only transformer family apart from another: the few places where their
/// forward passes differ. There is one forward pass (`LlamaModel+Pass.swift`); it reads these
/// features instead of branching on a family's name. Each family's recipe is in its own file
/// (`Architecture+Llama.swift`, …), read from `general.architecture`.
public struct Architecture: Sendable, Equatable, CustomStringConvertible {
    /// How RoPE pairs a head's dimensions.
    public enum RopeStyle: Sendable, Equatable {
        /// Adjacent pairs (2i, 2i + 1): llama.cpp's "normal" mode (Llama).
        case adjacentPairs
        /// Halves (i, i + n_rot / 2): llama.cpp's NEOX mode (Qwen, Gemma).
        case halves
    }

    /// The gated feed-forward's activation, applied to the gate before it multiplies `up`.
    public enum Activation: Sendable, Equatable {
        case silu
        /// GELU with the tanh approximation, as ggml evaluates it (through f16; see `ck_gelu_mul`).
        case geluTanh
        /// gpt-oss's clamped SwiGLU (ggml's `swiglu_oai`, α 1.702, limit 7; `ck_swiglu_oai_mul`).
        case swigluOAI
    }

    /// `general.architecture`, also the prefix of the family's metadata keys.
    public let name: String
    public let ropeStyle: RopeStyle
    public let activation: Activation
    /// Biases on the query, key and value projections (`attn_{q,k,v}.bias`).
    public let attentionBiases: Bool
    /// An RMSNorm over each head of the query and the key before RoPE (`attn_{q,k}_norm`).
    public let queryKeyNorms: Bool
    /// RMSNorms on the attention and feed-forward outputs before their residual adds
    /// (`post_attention_norm`, `post_ffw_norm`).
    public let postNorms: Bool
    /// Token embeddings multiplied by √width before the first layer.
    public let scalesEmbeddings: Bool
    /// Per-pair RoPE frequency divisors from `rope_freqs.weight` when the file has that tensor
    /// (Llama 3's long-context scaling).
    public let readsRopeFrequencyFactors: Bool
    /// Sliding-window attention: layer `l` attends globally when `l % pattern == pattern - 1`,
    /// within the last `{arch}.attention.sliding_window` positions otherwise; nil: every layer
    /// attends globally.
    public let slidingWindowPattern: Int?
    /// RoPE base of the sliding-window layers (the global ones use `{arch}.rope.freq_base`).
    public let slidingWindowRopeBase: Float?
    /// Attention rounded as llama.cpp's CPU flash attention rounds it where that takes its
    /// row-by-row kernel (`ck_attention_flash_rows`): the references of this family were made
    /// with flash attention on (a current llama.cpp's default), and its 8-bit activations make
    /// the answers follow every rounding. The other families keep the non-flash arithmetic their
    /// references were made with.
    public var flashAttentionRows: Bool = false
    /// A mixture of experts in place of the dense feed-forward, weighed as this says
    /// (`{arch}.expert_count` experts of `{arch}.expert_feed_forward_length`); nil: dense.
    public var expertGating: ExpertGating? = nil
    /// A bias on the attention output (`attn_output.bias`; gpt-oss).
    public var outputBias: Bool = false
    /// One sink logit per query head (`attn_sinks.weight`) in the attention softmax (gpt-oss).
    public var attentionSinks: Bool = false
    /// The tensor of the RMSNorm before the feed-forward (`blk.N.<name>.weight`): `ffn_norm`, or
    /// gpt-oss's `post_attention_norm`.
    public var feedForwardNormTensor: String = "ffn_norm"
    /// Biases on the router's logits and on each expert's three products (gpt-oss).
    public var expertBiases: Bool = false
    /// Layers without rotary positions (NoPE): layer `l` skips RoPE when `(l + 1) % step == 0`
    /// (llama.cpp's `n_no_rope_layer_step`, fixed at 4 for SmolLM3); nil: every layer rotates.
    public var noRopeLayerStep: Int? = nil
    /// One `ffn_up.weight` of 2 × FFN rows, the gate's rows first and then up's, and no
    /// `ffn_gate.weight` (Phi-3; llama.cpp's SwiGLU over a fused tensor gates with the first half).
    /// Loaded as two row-range views of the one matrix.
    public var fusedGateUp: Bool = false
    /// The query multiplied by the attention scale after RoPE, in f32, and attention then run with
    /// a scale of 1 (Phi-3's graph): rounds differently from scaling the products.
    public var scalesQueryBeforeAttention: Bool = false
    /// LongRoPE (`rope_factors_short.weight`, `rope_factors_long.weight`): the short factors while
    /// the served context is within `rope.scaling.original_context_length`, the long ones past it,
    /// and `rope.scaling.attn_factor` on the rotations (Phi-3 128k, Phi-3.5, Phi-4-mini).
    public var readsLongRopeFactors: Bool = false
    /// YaRN's tuning keys (`rope.scaling.yarn_beta_fast`, `yarn_beta_slow`, `yarn_log_multiplier`)
    /// and Llama 4's attention temperature (`attention.temperature_scale`: the query times
    /// 1 + scale · ln(⌊pos / original context⌋ + 1)) are read (Ministral 3; llama.cpp reads them
    /// for few families). YaRN itself (`rope.scaling.type yarn`) is read for every family.
    public var readsYarnTuningAndTemperature: Bool = false

    public var description: String { name }

    /// The families the engine runs, by `general.architecture`.
    public static let supported: [Architecture] = [
        .llama, .qwen2, .qwen3, .qwen3moe, .gemma3, .smollm3, .phi3, .mistral3, .gptOSS,
    ]

    /// The recipe for `general.architecture`, or nil for a family the engine does not run.
    public static func named(_ name: String) -> Architecture? {
        supported.first { $0.name == name }
    }

    /// Whether layer `layer` rotates its queries and keys (false for a NoPE layer).
    func usesRope(layer: Int) -> Bool {
        guard let step = noRopeLayerStep, step > 0 else { return true }
        return (layer + 1) % step != 0
    }

    /// Whether layer `layer` attends within the sliding window.
    func isSlidingWindowLayer(_ layer: Int) -> Bool {
        guard let pattern = slidingWindowPattern, pattern > 0 else { return false }
        return layer % pattern < pattern - 1
    }
}
