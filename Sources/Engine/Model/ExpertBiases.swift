/// The biases of a mixture-of-experts feed-forward that has them (gpt-oss): one per router
/// logit, and per expert one per output of its gate, up and down products (llama.cpp adds them
/// after each product: `ggml_add` on the logits, `ggml_add_id` on the experts' outputs).
struct ExpertBiases {
    /// [count]
    let router: [Float]
    /// [count][expert width]
    let gate: [[Float]]
    let up: [[Float]]
    /// [count][width]
    let down: [[Float]]

    init(gguf: GGUFFile, prefix: String, width: Int, experts: ModelConfig.Experts) throws(ModelError) {
        router = try VectorLoader.load(gguf: gguf, name: prefix + "ffn_gate_inp.bias", count: experts.count)
        let f = experts.feedForwardLength
        gate = try Self.rows(gguf, prefix + "ffn_gate_exps.bias", width: f, count: experts.count)
        up = try Self.rows(gguf, prefix + "ffn_up_exps.bias", width: f, count: experts.count)
        down = try Self.rows(gguf, prefix + "ffn_down_exps.bias", width: width, count: experts.count)
    }

    /// A 2-D bias tensor (GGUF shape [width, count]) as `count` rows of `width`.
    private static func rows(_ gguf: GGUFFile, _ name: String, width: Int, count: Int) throws(ModelError) -> [[Float]] {
        guard let info = gguf.tensors[name] else { throw .missingTensor(name) }
        guard info.shape == [width, count] else {
            throw .wrongShape(tensor: name, expected: [width, count], actual: info.shape)
        }
        let all = try VectorLoader.loadFlat(gguf: gguf, name: name, count: width * count)
        return (0..<count).map { Array(all[($0 * width)..<(($0 + 1) * width)]) }
    }
}
