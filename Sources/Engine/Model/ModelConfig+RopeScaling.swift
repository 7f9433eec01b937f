import Foundation

extension ModelConfig {
    /// Reads `{arch}.rope.scaling.*` and `{arch}.attention.temperature_scale` into `ropeScaling`.
    /// Types: none, linear and yarn, for every family (as llama.cpp does); YaRN's betas and log
    /// multiplier and the temperature only where the recipe reads them
    /// (`readsYarnTuningAndTemperature`, as llama.cpp reads them for those families alone).
    mutating func readRopeScaling(_ gguf: GGUFFile, prefix: String) throws(ModelError) {
        ropeScaling = RopeScaling()
        ropeScaling.originalContext =
            gguf.optionalInt(prefix + "rope.scaling.original_context_length") ?? trainedContextLength
        guard ropeScaling.originalContext > 0 else {
            throw .invalidHyperParameter(
                "\(prefix)rope.scaling.original_context_length \(ropeScaling.originalContext) must be > 0")
        }
        ropeScaling.attnFactor = gguf.optionalFloat(prefix + "rope.scaling.attn_factor") ?? 1
        let type = gguf.optionalString(prefix + "rope.scaling.type") ?? "none"
        let factor = gguf.optionalFloat(prefix + "rope.scaling.factor") ?? 0
        switch type {
        case "none": break
        case "linear":
            if factor > 0 { ropeScaling.freqScale = 1 / factor }
        case "yarn":
            if factor > 0 { ropeScaling.freqScale = 1 / factor }
            readYarn(gguf, prefix: prefix)
        case let other:
            throw .invalidHyperParameter(
                "\(prefix)rope.scaling.type '\(other)' is not supported (only none, linear and yarn)")
        }
        if architecture.readsYarnTuningAndTemperature,
            let scale = gguf.optionalFloat(prefix + "attention.temperature_scale"), scale != 0
        {
            ropeScaling.temperatureScale = scale
        }
    }

    /// YaRN as llama.cpp sets it up (its library is built without FMA, so these roundings are its
    /// own): the magnitude factor 0.1 ln(s) + 1 (with `yarn_log_multiplier` where the family reads
    /// one), divided by the correction ggml's rope multiplies back in, times the file's
    /// `attn_factor`; the betas that place the correction dims where the family reads them.
    private mutating func readYarn(_ gguf: GGUFFile, prefix: String) {
        var logMultiplier: Float = 0
        if architecture.readsYarnTuningAndTemperature {
            ropeScaling.betaFast = gguf.optionalFloat(prefix + "rope.scaling.yarn_beta_fast") ?? 32
            ropeScaling.betaSlow = gguf.optionalFloat(prefix + "rope.scaling.yarn_beta_slow") ?? 1
            logMultiplier = gguf.optionalFloat(prefix + "rope.scaling.yarn_log_multiplier") ?? 0
        }
        ropeScaling.extFactor = 1
        func magnitude(_ scale: Float, _ m: Float) -> Float { scale <= 1 ? 1 : 0.1 * m * logf(scale) + 1 }
        let factor = 1 / ropeScaling.freqScale
        var attn = logMultiplier != 0 ? magnitude(factor, 1) / magnitude(factor, logMultiplier) : magnitude(factor, 1)
        attn *= 1 / (1 + 0.1 * logf(factor))
        ropeScaling.attnFactor = attn * ropeScaling.attnFactor
    }
}
