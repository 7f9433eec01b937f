import CKernels
import Foundation

/// How RoPE is stretched past the context a model was trained for, and the attention temperature,
/// as llama.cpp reads them (its `load_hparams` and context set-up; read in
/// `ModelConfig+RopeScaling.swift`): `linear` divides positions by the factor; `yarn` mixes
/// interpolated and extrapolated angles per rotary pair (ggml's rope_yarn) and scales their
/// magnitude; LongRoPE's attention factor; Llama 4's temperature.
public struct RopeScaling: Sendable, Equatable {
    /// 1 / `rope.scaling.factor` for `linear` and `yarn` (1 for `none`, or without a factor).
    public var freqScale: Float = 1
    /// YaRN's mix of extrapolated angles (1 for `rope.scaling.type yarn`, else 0; llama.cpp's
    /// yarn_ext_factor when the file names no other).
    public var extFactor: Float = 0
    /// The factor on every RoPE cosine and sine (llama.cpp's `yarn_attn_factor` after its
    /// context set-up): `rope.scaling.attn_factor`, times YaRN's magnitude terms.
    public var attnFactor: Float = 1
    /// `rope.scaling.original_context_length`, else the trained context: YaRN's correction dims,
    /// LongRoPE's choice of factors and the temperature's step are measured in it.
    public var originalContext = 0
    /// YaRN's correction range: the rotary pairs that turn between β_fast and β_slow times in the
    /// original context (ggml's `rope_yarn_corr_dims`, from each layer's own RoPE base). llama.cpp's
    /// defaults unless the family reads `rope.scaling.yarn_beta_fast` / `yarn_beta_slow`.
    public var betaFast: Float = 32
    public var betaSlow: Float = 1
    /// `attention.temperature_scale` (0: none): position p's query is multiplied by
    /// 1 + scale · ln(⌊p / originalContext⌋ + 1).
    public var temperatureScale: Float = 0

    /// The temperature factor of position `position` (llama.cpp computes it in double from float
    /// operands and stores a float).
    func temperature(at position: Int) -> Float {
        let step = (Float(position) / Float(originalContext)).rounded(.down)
        return Float(Foundation.log(Double(step) + 1.0) * Double(temperatureScale) + 1.0)
    }

    /// The kernels' form (ck_rope_yarn): the correction dims are computed there from the base of
    /// the layer being rotated.
    var kernelArguments: ck_rope_yarn {
        ck_rope_yarn(
            ext_factor: extFactor, attn_factor: attnFactor, beta_fast: betaFast, beta_slow: betaSlow,
            n_ctx_orig: Int32(originalContext))
    }
}
