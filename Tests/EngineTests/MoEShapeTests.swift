import Foundation
import Testing

@testable import Engine

/// Mixture-of-experts layers (issue #38, `qwen3moe`) against llama.cpp, as `ModelShapeTests` checks
/// the dense families: random-weight models in `Tests/Fixtures/reference/tiny/shapes/qwen3moe-*`
/// with 4, 8, 16 and 32 experts of which 1, 2, 4 and 8 are used, expert widths 32 to 256, head
/// widths 16 to 128, GQA ratios 1, 2 and 4, 1 and 2 layers; F32 experts, and quantized by
/// llama-quantize: Q8_0, Q4_K_M (Q4_K gate and up, read as llama.cpp's repacked Q4_K, which its
/// MUL_MAT_ID takes row by row; Q4_K and Q6_K down) and Q6_K (the first layer's experts, which
/// 8 or more rows of the 40-token prompt choose, through llama.cpp's tiled Q6_K product).
/// `make_tiny_moe.py` writes the F32 files and `scripts/make-moe-references.sh` the quantized ones
/// and llama.cpp's answers: the top-10 log-probabilities after each of three token-id prompts (5,
/// 12 and 40 ids, fed as one batch), then 24 greedy tokens, with llama.cpp's non-flash attention
/// (as for the other qwen families). Same bounds as the dense sweep: |Δ log p| ≤ 0.005 over
/// llama.cpp's top 10 (measured: at most 3.8e-6, the Q4_K_M file's 12-token prompt; elsewhere
/// 5e-8, the printed digits), greedy tokens equal until a near-tie (top two logits within 0.05 on
/// either side; none was needed).
@Suite(.serialized)
struct MoEShapeTests {
    static let models = [
        "qwen3moe-e4-k1-hd16-gqa1", "qwen3moe-e8-k2-hd32-gqa2", "qwen3moe-e16-k4-hd48-gqa4",
        "qwen3moe-e32-k8-hd64-gqa2", "qwen3moe-e8-k2-hd32-gqa2-q8_0", "qwen3moe-e4-k2-hd64-gqa2-q4_k_m",
        "qwen3moe-e4-k2-hd128-gqa2-q6_k",
    ]

    @Test(arguments: models)
    func expertsMatchLlamaCpp(name: String) throws {
        let (model, reference) = try ModelShapeTests.shapeModel(name)
        #expect(model.config.architecture == .qwen3moe)
        #expect(model.config.experts != nil)
        try ModelShapeTests.expectMatchesLlamaCpp(name, model: model, reference: reference)
    }

    /// The sweep holds the shapes it claims, and the quantized files the expert types.
    @Test func sweepCoversItsShapes() throws {
        var counts: Set<Int> = []
        var used: Set<Int> = []
        var types: Set<GGMLType> = []
        for name in Self.models {
            let model = try ModelShapeTests.shapeModel(name).0
            guard let experts = model.config.experts else { continue }
            counts.insert(experts.count)
            used.insert(experts.used)
            for layer in model.layers {
                guard case .experts(let ffn) = layer.feedForward else { continue }
                types.formUnion((ffn.gate + ffn.up + ffn.down).map(\.type))
            }
        }
        #expect(counts == [4, 8, 16, 32])
        #expect(used == [1, 2, 4, 8])
        #expect(types.isSuperset(of: [.f32, .q8_0, .q4_K, .q6_K]))
    }

    /// The weight sizes the start-up reports: every tensor's bytes in the file but the norm
    /// vectors, and per token the same with only `used` of the experts.
    @Test func weightBytesCountTheFilesTensors() throws {
        let name = "qwen3moe-e8-k2-hd32-gqa2-q8_0"
        let path = TestFixtures.referenceRoot.appendingPathComponent("tiny/shapes/\(name).gguf").path
        let gguf = try GGUFFile(path: path)
        let model = try LlamaModel(gguf: gguf, threads: 1)
        var all = 0
        var experts = 0
        for (tensorName, info) in gguf.tensors where info.shape.count > 1 {
            let bytes = try gguf.tensorData(tensorName).count
            all += bytes
            if tensorName.hasSuffix("_exps.weight") { experts += bytes }
        }
        #expect(model.weightBytes == all)
        let c = model.config
        let embeddingRow = try gguf.tensorData("token_embd.weight").count / c.vocabularySize
        // Tied output head: the whole embedding table is read for the logits, plus one row.
        let perToken = all - experts + experts / c.experts!.count * c.experts!.used + embeddingRow
        #expect(model.activeWeightBytesPerToken == perToken)
        #expect(model.activeWeightBytesPerToken < model.weightBytes)
    }
}
