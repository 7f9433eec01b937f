import CKernels
import Testing

@testable import Engine

/// A whole model with its matrices in the interleaved forms against the same file read in its
/// own layout: the logits bit for bit, token by token (decode's one-token orders) and as one
/// batch (a prompt's tiled orders), on 1 and 2 threads, on every kernel path. The wide tiny
/// model mixes the types (Q4_K, Q5_K, Q6_K, Q4_0, Q4_1, Q5_0, Q8_0 among them), so each form
/// the CPU makes is in the pass; Q5_K-, Q3_K- and Q2_K-only variants make sure those are.
@Suite(.serialized)
struct InterleavedModelTests {
    static let tokens: [Int32] = [3, 17, 60, 0, 42, 42, 7, 33, 15, 8, 1]

    /// Every matrix of the wide tiny model in `type` (the embedding stays Q6_K).
    static func uniform(_ tiny: WideTinyModel, _ type: GGMLType) -> [String: (
        shape: [Int], type: GGMLType, data: [UInt8]
    )] {
        var rng = SeededRandom(seed: 77)
        var out: [String: (shape: [Int], type: GGMLType, data: [UInt8])] = [:]
        for t in tiny.tensors where t.name.hasPrefix("blk.") && t.shape.count == 2 {
            let data = RandomWeights.matrix(
                type, rows: t.shape[1], columns: t.shape[0], scale: (1 / Float(t.shape[0])).squareRoot(), rng: &rng)
            out[t.name] = (t.shape, type, data)
        }
        return out
    }

    /// Q2_K's form on the AVX-512 path takes llama.cpp's repacked order, which its file layout
    /// does not (llama.cpp repacks it on AVX-512 CPUs only, and only in whole groups of eight rows;
    /// Q2_KProductTests and InterleavedKQuantTests hold both to llama.cpp's bits): the models are
    /// not compared there (their logits may or may not differ: products a few ulps apart often
    /// quantize to the same Q8_K activations), and the mixed model swaps its Q2_K matrix for Q5_K
    /// so that every other form is still compared on that path.
    @Test(arguments: [nil, GGMLType.q5_K, .q3_K, .q2_K])
    func interleavedModelGivesTheFileLayoutsLogits(only: GGMLType?) throws {
        let mixed = WideTinyModel.mixedLayerTypes.map { $0.map { $0 == .q2_K ? GGMLType.q5_K : $0 } }
        let tiny = WideTinyModel(layerTypes: mixed)
        let path = try tiny.write(replacing: only.map { Self.uniform(tiny, $0) } ?? [:])
        let repacked = { (kernels: String) in only == .q2_K && kernels == "fast" && InterleavedKernelTests.cpuHasVNNI }
        if let only {
            #expect(ck_interleaving_pays(Int32(only.rawValue)) == 1, "this CPU makes the \(only) form")
        }
        for threads in [1, 2] {
            let file = try LlamaModel(gguf: try GGUFFile(path: path), threads: threads, copyWeights: false)
            let packed = try LlamaModel(gguf: try GGUFFile(path: path), threads: threads, copyWeights: true)
            try bothPaths { kernels in
                if repacked(kernels) { return }
                // One batch of 11 rows (micro-batches of 8+ take the tiled orders), then token by
                // token (the one-token orders).
                try ModelLogits.expectSame(
                    file, packed, tokens: Self.tokens, stepped: 5, "\(kernels) threads \(threads)")
            }
        }
    }
}
