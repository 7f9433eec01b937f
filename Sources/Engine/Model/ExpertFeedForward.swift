/// A mixture-of-experts feed-forward (llama.cpp's `build_moe_ffn` as the qwen3moe graph calls
/// it): a router gives each token a probability per expert, the token goes through its `used`
/// most probable experts (each a gated MLP of its own weights), and their outputs are added with
/// the weights `gating` makes of those probabilities.
///
/// The experts' matrices are 3-D tensors in the file (`ffn_{gate,up,down}_exps.weight`, GGUF
/// shape [columns, rows, experts]), one expert's 2-D matrix after the other: each expert is a
/// `WeightMatrix` view at its offset, so every weight type and interleaved form of a dense
/// matrix serves an expert too.
struct ExpertFeedForward {
    /// [width → count]: the router's logits (`ffn_gate_inp.weight`).
    var router: WeightMatrix
    /// Per expert: [width → expert width], [width → expert width], [expert width → width].
    var gate: [WeightMatrix]
    var up: [WeightMatrix]
    var down: [WeightMatrix]
    /// Experts each token uses.
    let used: Int
    let gating: Architecture.ExpertGating
    /// Biases (`Architecture.expertBiases`): on the router's logits ([count]), and per expert on
    /// its gate and up outputs ([expert width] each) and its down output ([width]).
    let biases: ExpertBiases?

    var count: Int { router.rows }

    /// Loads layer `prefix`'s router and experts ("blk.N.").
    init(
        gguf: GGUFFile, prefix: String, width: Int, experts: ModelConfig.Experts, gating: Architecture.ExpertGating,
        withBiases: Bool = false
    ) throws(ModelError) {
        router = try WeightMatrix(
            gguf: gguf, name: prefix + "ffn_gate_inp.weight", columns: width, rows: experts.count)
        let f = experts.feedForwardLength
        func stack(_ name: String, _ columns: Int, _ rows: Int) throws(ModelError) -> [WeightMatrix] {
            try WeightMatrix.experts(
                gguf: gguf, name: prefix + name + ".weight", columns: columns, rows: rows, count: experts.count)
        }
        gate = try stack("ffn_gate_exps", width, f)
        up = try stack("ffn_up_exps", width, f)
        down = try stack("ffn_down_exps", f, width)
        used = experts.used
        self.gating = gating
        biases = withBiases ? try ExpertBiases(gguf: gguf, prefix: prefix, width: width, experts: experts) : nil
    }

    var matrices: [WeightMatrix] { [router] + gate + up + down }

    mutating func updateMatrices(_ body: (inout WeightMatrix) -> Void) {
        body(&router)
        for e in gate.indices { body(&gate[e]) }
        for e in up.indices { body(&up[e]) }
        for e in down.indices { body(&down[e]) }
    }

    /// Bytes in the file of the router and `experts` experts' three matrices.
    func fileBytes(experts: Int) -> Int {
        router.fileBytes + experts * (gate[0].fileBytes + up[0].fileBytes + down[0].fileBytes)
    }
}
