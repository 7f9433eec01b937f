import CKernels
import Foundation

/// RoPE scaling past the trained context, read as llama.cpp reads it (`{arch}.rope.scaling.*`):
/// `linear` divides positions by the factor; `yarn` mixes interpolated and extrapolated angles
/// per rotary pair (ggml's rope_yarn) and scales their magnitude; `none` neither.
public struct RopeScaling: Sendable, Equatable {
    /// 1 / `rope.scaling.factor` (1 for `none`, or without a factor).
    public var freqScale: Float = 1
    /// 1 with YaRN, else 0 (llama.cpp's yarn_ext_factor when the file names no other).
    public var extFactor: Float = 0
    /// llama.cpp's yarn_attn_factor: the cosines and sines are multiplied by it.
    public var attentionFactor: Float = 1
    /// `rope.scaling.original_context_length` (else the trained context): YaRN's correction
    /// dimensions are the rotary pairs that turn between β_fast and β_slow times in it.
    public var originalContext: Int
    /// llama.cpp's defaults (the families here read no other).
    public var betaFast: Float = 32
    public var betaSlow: Float = 1

    init(gguf: GGUFFile, prefix: String, trainedContext: Int) throws(ModelError) {
        originalContext = gguf.optionalInt(prefix + "rope.scaling.original_context_length") ?? trainedContext
        let factor = gguf.optionalFloat(prefix + "rope.scaling.factor") ?? 0
        let type = gguf.optionalString(prefix + "rope.scaling.type") ?? "none"
        switch type {
        case "none": break
        case "linear", "yarn": if factor > 0 { freqScale = 1 / factor }
        case let other:
            throw .invalidHyperParameter("rope.scaling.type '\(other)' is not supported (only none, linear and yarn)")
        }
        if type == "yarn" {
            extFactor = 1
            // llama_context's arithmetic (its library is built without FMA): the magnitude
            // correction 0.1 ln(s) + 1, divided out again here since ggml's rope_yarn multiplies
            // it back in (so the two roundings are llama.cpp's).
            let scale = 1 / freqScale
            let mscale: Float = scale <= 1 ? 1 : 0.1 * 1 * logf(scale) + 1
            attentionFactor = mscale * (1 / (1 + 0.1 * logf(scale)))
        }
        attentionFactor *= gguf.optionalFloat(prefix + "rope.scaling.attn_factor") ?? 1
        guard originalContext > 0 else {
            throw .invalidHyperParameter("rope.scaling.original_context_length \(originalContext) must be > 0")
        }
    }

    /// The kernels' form (ck_rope_yarn).
    var kernelArguments: ck_rope_yarn {
        ck_rope_yarn(
            ext_factor: extFactor, attn_factor: attentionFactor, beta_fast: betaFast, beta_slow: betaSlow,
            n_ctx_orig: Int32(originalContext))
    }
}
