import Foundation

/// How RoPE is stretched past the context a model was trained for, and the attention temperature,
/// as llama.cpp reads them (its `load_hparams` and context set-up): linear scaling (in
/// `ModelConfig.ropeFreqScale`), YaRN, LongRoPE's attention factor, Llama 4's temperature.
public struct RopeScaling: Sendable, Equatable {
    /// `rope.scaling.original_context_length`, else the trained context: YaRN's correction dims,
    /// LongRoPE's choice of factors and the temperature's step are measured in it.
    public var originalContext = 0
    /// YaRN's mix of extrapolated angles (1 for `rope.scaling.type yarn`, else 0).
    public var extFactor: Float = 0
    /// The factor on every RoPE cosine and sine (llama.cpp's `yarn_attn_factor` after its
    /// context set-up): `rope.scaling.attn_factor`, times YaRN's magnitude terms.
    public var attnFactor: Float = 1
    /// YaRN's correction range over the pairs (ggml's `rope_yarn_corr_dims`).
    public var correctionLow: Float = 0
    public var correctionHigh: Float = 0
    /// `attention.temperature_scale` (0: none): position p's query is multiplied by
    /// 1 + scale · ln(⌊p / originalContext⌋ + 1).
    public var temperatureScale: Float = 0

    /// The temperature factor of position `position` (llama.cpp computes it in double from float
    /// operands and stores a float).
    func temperature(at position: Int) -> Float {
        let step = (Float(position) / Float(originalContext)).rounded(.down)
        return Float(Foundation.log(Double(step) + 1.0) * Double(temperatureScale) + 1.0)
    }
}

extension ModelConfig {
    /// Reads `{arch}.rope.scaling.*` and `{arch}.attention.temperature_scale`. Types: none,
    /// linear (every family), yarn (families whose recipe reads it: `readsYarnAndTemperature`).
    mutating func readRopeScaling(_ gguf: GGUFFile, prefix: String) throws(ModelError) {
        ropeScaling.originalContext =
            gguf.optionalInt(prefix + "rope.scaling.original_context_length") ?? trainedContextLength
        ropeScaling.attnFactor = gguf.optionalFloat(prefix + "rope.scaling.attn_factor") ?? 1
        let type = gguf.optionalString(prefix + "rope.scaling.type") ?? "none"
        let factor = gguf.optionalFloat(prefix + "rope.scaling.factor") ?? 0
        switch type {
        case "none": break
        case "linear":
            if factor > 0 { ropeFreqScale = 1 / factor }
        case "yarn" where architecture.readsYarnAndTemperature:
            if factor > 0 { ropeFreqScale = 1 / factor }
            readYarn(gguf, prefix: prefix)
        case let other:
            let supported = architecture.readsYarnAndTemperature ? "none, linear and yarn" : "none and linear"
            throw .invalidHyperParameter(
                "\(prefix)rope.scaling.type '\(other)' is not supported for \(architecture.name) (only \(supported))")
        }
        if architecture.readsYarnAndTemperature,
            let scale = gguf.optionalFloat(prefix + "attention.temperature_scale"), scale != 0
        {
            guard ropeScaling.originalContext > 0 else {
                throw .invalidHyperParameter("\(prefix)attention.temperature_scale needs an original context length")
            }
            ropeScaling.temperatureScale = scale
        }
    }

    /// YaRN as llama.cpp sets it up: the magnitude factor (with `yarn_log_multiplier` when the file
    /// has one), divided by the correction ggml's rope multiplies back, times the file's
    /// `attn_factor`; the correction dims from `yarn_beta_fast` and `yarn_beta_slow`.
    private mutating func readYarn(_ gguf: GGUFFile, prefix: String) {
        let betaFast = gguf.optionalFloat(prefix + "rope.scaling.yarn_beta_fast") ?? 32
        let betaSlow = gguf.optionalFloat(prefix + "rope.scaling.yarn_beta_slow") ?? 1
        let logMultiplier = gguf.optionalFloat(prefix + "rope.scaling.yarn_log_multiplier") ?? 0
        ropeScaling.extFactor = 1
        func magnitude(_ scale: Float, _ m: Float) -> Float { scale <= 1 ? 1 : 0.1 * m * logf(scale) + 1 }
        let factor = 1 / ropeFreqScale
        var attn = logMultiplier != 0 ? magnitude(factor, 1) / magnitude(factor, logMultiplier) : magnitude(factor, 1)
        attn *= 1 / (1 + 0.1 * logf(factor))
        ropeScaling.attnFactor = attn * ropeScaling.attnFactor
        let dims = Float(ropeDimensionCount)
        let context = Float(ropeScaling.originalContext)
        func correctionDim(_ rotations: Float) -> Float {
            dims * logf(context / (rotations * 2 * Float.pi)) / (2 * logf(ropeFreqBase))
        }
        ropeScaling.correctionLow = max(0, correctionDim(betaFast).rounded(.down))
        ropeScaling.correctionHigh = min(dims - 1, correctionDim(betaSlow).rounded(.up))
    }
}
