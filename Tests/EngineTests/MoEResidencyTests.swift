import Foundation
import Testing

@testable import Engine

/// Issue #38 item 4: a mixture-of-experts model whose interleaved copies would pass half the
/// physical memory keeps its experts' matrices in the file layout, read from the mapping. Here a
/// small injected `physicalMemory` makes the tiny quantized files take that road: the copies
/// shrink by the experts' bytes (counted from the file's tensor table), the logits are the
/// copied load's bit for bit (as one 12-row batch, the tiled orders, and token by token), and
/// llama.cpp's answers still hold.
@Suite(.serialized)
struct MoEResidencyTests {
    static let models = [
        "qwen3moe-e8-k2-hd32-gqa2-q8_0", "qwen3moe-e4-k2-hd64-gqa2-q4_k_m", "qwen3moe-e4-k2-hd128-gqa2-q6_k",
        // gpt-oss's MXFP4 experts (llama-quantize MXFP4_MOE): their interleaved form counted and dropped alike.
        "gptoss-e8-k2-mxfp4",
    ]
    static let tokens: [Int32] = [3, 17, 60, 0, 42, 42, 7, 33, 15, 8, 1, 5]

    static func path(_ name: String) -> String {
        TestFixtures.referenceRoot.appendingPathComponent("tiny/shapes/\(name).gguf").path
    }

    @Test(arguments: models)
    func expertsStayMappedOverTheBudgetWithTheSameLogits(name: String) throws {
        let gguf = try GGUFFile(path: Self.path(name))
        let copied = try LlamaModel(gguf: gguf, threads: 2)
        #expect(copied.weightCopies == .all)
        guard copied.copiedWeightBytes > 0 else {
            print("\(name): this CPU makes no interleaved copies; nothing to compare")
            return
        }
        // The experts' bytes in the file, and those of them the copied load did copy.
        var expertBytes = 0
        for (tensorName, _) in gguf.tensors where tensorName.hasSuffix("_exps.weight") {
            expertBytes += try gguf.tensorData(tensorName).count
        }
        let copiedExperts = copied.layers.flatMap(\.feedForward.expertMatrices)
        #expect(!copiedExperts.isEmpty && copiedExperts.allSatisfy(\.isCopied), "\(name): every expert copied")

        // Half of this is just short of the copies: the experts must stay in the file.
        let mapped = try LlamaModel(gguf: gguf, threads: 2, physicalMemory: 2 * copied.copiedWeightBytes - 2)
        #expect(mapped.weightCopies == .allButExperts)
        #expect(mapped.layers.flatMap(\.feedForward.expertMatrices).allSatisfy { !$0.isCopied })
        #expect(mapped.mappedWeightBytes == copied.mappedWeightBytes + expertBytes)
        #expect(mapped.copiedWeightBytes < copied.copiedWeightBytes)
        #expect(mapped.weightBytes == copied.weightBytes)
        print(
            "\(name): copied \(copied.copiedWeightBytes) B at load, \(mapped.copiedWeightBytes) B with the experts mapped"
        )

        // Too small for anything: nothing copied, all read in place.
        let none = try LlamaModel(gguf: gguf, threads: 2, physicalMemory: 2)
        #expect(none.weightCopies == .none && none.copiedWeightBytes == 0)
        #expect(none.mappedWeightBytes == none.weightBytes)

        for other in [mapped, none] {
            try ModelLogits.expectSame(copied, other, tokens: Self.tokens, stepped: 5, "\(name) \(other.weightCopies)")
        }

        // And llama.cpp's answers, read with the experts in place.
        let reference = try TestFixtures.reference("tiny/shapes/\(name).json")
        let cases = try #require(reference["cases"] as? [[String: Any]])
        let check = ReferenceModelCheck(model: mapped, reference: ["logits": cases, "greedy": cases])
        for outcome in try check.logits() {
            for (id, difference) in outcome.logprobDifferences {
                #expect(
                    difference <= ModelShapeTests.logprobBound,
                    "\(name) \(outcome.name): token \(id) |Δ logprob| = \(difference)")
            }
        }
    }
}
