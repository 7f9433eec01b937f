import Foundation
import Testing

@testable import Engine

/// The first layer's experts' summed output (`ffn_moe_out-0`) of the Q4_K_M and Q6_K tiny MoE
/// files, bit for bit against llama.cpp's (`scripts/llama-cpp-tensors.cpp`, `-fa off`, the 12- and 40-token
/// prompts of its shape reference). The log-probability bound of `MoEShapeTests` cannot see
/// which arithmetic each expert's K-quant product takes (a tiled order against a per-row one
/// moves this tensor by 1–3 ulp); this compares every value's bits, read both through the
/// interleaved copies and from the file layout. Dropping the tiled flag (`markExpertOrders`)
/// fails the Q6_K file's (1,821 and 8,562 values differ); the Q4_K_M file's first layer is
/// Q4_K, row by row in llama.cpp either way, and does not see it.
@Suite(.serialized)
struct MoETensorBitsTests {
    static let names = ["qwen3moe-e4-k2-hd64-gqa2-q4_k_m", "qwen3moe-e4-k2-hd128-gqa2-q6_k"]

    @Test(arguments: names, [false, true])
    func firstLayersExpertOutputIsLlamaCppsBits(name: String, mapped: Bool) throws {
        let root = TestFixtures.referenceRoot.appendingPathComponent("tiny/shapes")
        let gguf = try GGUFFile(path: root.appendingPathComponent("\(name).gguf").path)
        let reference = try TestFixtures.reference("tiny/shapes/\(name).ffn_moe_out.json")
        let cases = try #require(reference["cases"] as? [[String: Any]])
        let width = try #require(reference["width"] as? Int)
        let model = try LlamaModel(gguf: gguf, threads: 2, physicalMemory: mapped ? 2 : LlamaModel.physicalMemoryBytes)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-moe-bits-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        model.tensorDumpDirectory = directory.path
        for c in cases {
            let ids = try #require(c["prompt_ids"] as? [Int]).map { Int32($0) }
            let expected = try #require(c["bits"] as? [Int]).map { UInt32($0) }
            var logits = [Float](repeating: 0, count: model.config.vocabularySize)
            try logits.withUnsafeMutableBufferPointer {
                try model.forward(tokens: ids, cache: model.makeCache(capacity: 64), logits: $0)
            }
            let data = try Data(contentsOf: directory.appendingPathComponent("ffn_moe_out-0.f32"))
            let ours = data.withUnsafeBytes { Array($0.bindMemory(to: UInt32.self)) }
            #expect(ours.count == ids.count * width && expected.count == ids.count * width)
            let differing = zip(ours, expected).filter { $0 != $1 }.count
            #expect(
                differing == 0,
                "\(name) \(ids.count) tokens, mapped \(mapped): \(differing) values differ from llama.cpp's")
        }
    }
}
