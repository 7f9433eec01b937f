/// The parts of loading that differ between files of one pass: fused projections read as
/// row-range views, RoPE frequency factors, and what is refused.
extension LlamaModel {
    /// Q, K and V of layer `layer`: separate `attn_{q,k,v}.weight`, or one `attn_qkv.weight` of
    /// qDim + 2 · kvDim rows (Q's, then K's, then V's), read as three views of it. llama.cpp takes
    /// either form for every family that loads its projections the common way (Phi-3 ships the
    /// fused one); the products read the same rows either way.
    static func attentionProjections(
        _ gguf: GGUFFile, layer: Int, dim: Int, qDim: Int, kvDim: Int
    ) throws(ModelError) -> (q: WeightMatrix, k: WeightMatrix, v: WeightMatrix) {
        let p = "blk.\(layer)."
        guard gguf.tensors[p + "attn_qkv.weight"] != nil else {
            return (
                try WeightMatrix(gguf: gguf, name: p + "attn_q.weight", columns: dim, rows: qDim),
                try WeightMatrix(gguf: gguf, name: p + "attn_k.weight", columns: dim, rows: kvDim),
                try WeightMatrix(gguf: gguf, name: p + "attn_v.weight", columns: dim, rows: kvDim)
            )
        }
        // [qDim + 2·kvDim × dim]: the query's rows, then the key's, then the value's.
        let fused = try WeightMatrix(gguf: gguf, name: p + "attn_qkv.weight", columns: dim, rows: qDim + 2 * kvDim)
        return (
            fused.rows(0..<qDim, name: p + "attn_qkv.weight[q]"),
            fused.rows(qDim..<(qDim + kvDim), name: p + "attn_qkv.weight[k]"),
            fused.rows((qDim + kvDim)..<(qDim + 2 * kvDim), name: p + "attn_qkv.weight[v]")
        )
    }

    /// Gate and up of layer `layer`: `ffn_gate.weight` and `ffn_up.weight`, or (`fused`) one
    /// `ffn_up.weight` of 2 · ffn rows, the gate's first (llama.cpp's SwiGLU over a fused tensor
    /// applies SiLU to the first half), read as two views of it.
    static func gateAndUp(
        _ gguf: GGUFFile, layer: Int, dim: Int, ffn: Int, fused: Bool
    ) throws(ModelError) -> (gate: WeightMatrix, up: WeightMatrix) {
        let p = "blk.\(layer)."
        guard fused else {
            return (
                try WeightMatrix(gguf: gguf, name: p + "ffn_gate.weight", columns: dim, rows: ffn),
                try WeightMatrix(gguf: gguf, name: p + "ffn_up.weight", columns: dim, rows: ffn)
            )
        }
        // [2·ffn × dim]: the gate's rows, then up's.
        let both = try WeightMatrix(gguf: gguf, name: p + "ffn_up.weight", columns: dim, rows: 2 * ffn)
        return (
            both.rows(0..<ffn, name: p + "ffn_up.weight[gate]"), both.rows(ffn..<(2 * ffn), name: p + "ffn_up.weight")
        )
    }

    /// Per-pair RoPE frequency divisors: `rope_freqs.weight` (Llama 3) where the recipe reads it;
    /// LongRoPE's `rope_factors_short.weight` while the served context is within the original one,
    /// `rope_factors_long.weight` past it (llama.cpp decides by its context per sequence the same
    /// way); nil when the file has none.
    static func ropeFrequencyFactors(_ gguf: GGUFFile, config: ModelConfig) throws(ModelError) -> [Float]? {
        let arch = config.architecture
        let count = config.ropeDimensionCount / 2
        if arch.readsRopeFrequencyFactors && gguf.tensors["rope_freqs.weight"] != nil {
            return try VectorLoader.load(gguf: gguf, name: "rope_freqs.weight", count: count)
        }
        guard arch.readsLongRopeFactors else { return nil }
        let long = "rope_factors_long.weight"
        let short = "rope_factors_short.weight"
        switch (gguf.tensors[long] != nil, gguf.tensors[short] != nil) {
        case (false, false): return nil
        case (true, true):
            let name = config.contextLength > config.ropeScaling.originalContext ? long : short
            return try VectorLoader.load(gguf: gguf, name: name, count: count)
        case (true, false): throw .missingTensor(short)
        case (false, true): throw .missingTensor(long)
        }
    }

    /// What a file of a supported family may carry that this pass does not compute, refused with
    /// the tensor or key named rather than run without it.
    static func refuseUnsupportedParts(_ gguf: GGUFFile, config: ModelConfig) throws(ModelError) {
        let prefix = config.architecture.name + "."
        if config.architecture.expertGating == nil, let experts = gguf.optionalInt(prefix + "expert_count"), experts > 0
        {
            throw .unsupported(
                "\(prefix)expert_count \(experts): mixture-of-experts layers of \(config.architecture.name)")
        }
        // Biases llama.cpp adds where a file has them, refused unless the recipe adds them
        // (gpt-oss's output and expert biases); no supported file of the other families has them.
        let arch = config.architecture
        var biases = ["attn_qkv.bias", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"]
        if !arch.attentionBiases { biases += ["attn_q.bias", "attn_k.bias", "attn_v.bias"] }
        if !arch.outputBias { biases += ["attn_output.bias"] }
        if !arch.expertBiases {
            biases += ["ffn_gate_inp.bias", "ffn_gate_exps.bias", "ffn_up_exps.bias", "ffn_down_exps.bias"]
        }
        for layer in 0..<config.blockCount {
            for bias in biases where gguf.tensors["blk.\(layer).\(bias)"] != nil {
                throw .unsupported("tensor 'blk.\(layer).\(bias)' (a bias this engine does not add)")
            }
            // Sinks change every attention row's softmax; ignoring them would answer wrongly.
            if !arch.attentionSinks, gguf.tensors["blk.\(layer).attn_sinks.weight"] != nil {
                throw .unsupported(
                    "tensor 'blk.\(layer).attn_sinks.weight' (attention sinks, which \(arch.name) does not use)")
            }
        }
    }
}
