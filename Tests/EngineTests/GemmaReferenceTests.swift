import Foundation
import Testing

@testable import Engine

/// Gemma 3 270M (Q4_K_M: Q4_K, Q6_K, Q5_0, Q8_0 and F32 tensors; SentencePiece vocabulary of
/// 262,144) against a 2026-10 llama.cpp on the same file (`Tests/Fixtures/reference/gemma3/`). Its
/// greedy cases include a 787-token prompt, past the 512-token sliding window of five layers in six.
/// Issue #19 asks for top-10 probabilities within 0.002 and greedy runs identical for 16 tokens
/// in every case and in full in 4 of 5. Reached (2026-12-02): within 0.000075 (what is left is
/// llama-server's own float softmax sum) and all five greedy runs identical in full, because
/// the pass now reproduces llama.cpp's arithmetic bit for bit, as found tensor by tensor against
/// a llama.cpp of the reference's commit built on this machine kind (its server reproduces the
/// reference file exactly): the server feeds a prompt in the batches of its checkpoint rule
/// (`ReferenceModelCheck.llamaServerCheckpointBatches`), and each batch size has its own
/// kernels (Q4_K's repacked GEMV/GEMM, the tiled Q6_K product from 8 rows, flash attention
/// row by row, tiled from 64 rows, split over threads for a lone row past 256 positions).
/// The emulation is the same on every kernel path (the portable kernels give the same bits), so
/// the bounds hold on CPUs without AVX-512 too.
@Suite(.serialized)
struct GemmaReferenceTests {
    static var modelPath: String {
        TestFixtures.packageRoot.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path
    }

    /// The bound.
    static let probabilityBound = 0.002

    static func model() throws -> LlamaModel {
        guard FileManager.default.fileExists(atPath: modelPath) else {
            throw FixtureError("Gemma 3 missing at \(modelPath): run `make model` (make test does it)")
        }
        return try LlamaModel(gguf: try GGUFFile(path: modelPath), threads: 2, contextLimit: 2048)
    }

    @Test func readsGemma3sRecipe() throws {
        let model = try Self.model()
        let c = model.config
        #expect(c.architecture == .gemma3)
        #expect(c.embeddingLength == 640 && c.headDim == 256 && c.queryDim == 1024 && c.headCountKV == 1)
        #expect(c.trainedContextLength == 32768 && c.contextLength == 2048)
        #expect(c.slidingWindow == 512)
        // Layers 5, 11 and 17 attend globally with the file's RoPE base; the others slide, base 10,000.
        for (l, layer) in model.layers.enumerated() {
            let global = l % 6 == 5
            #expect(layer.window == (global ? 0 : 512), "layer \(l)")
            #expect(layer.ropeBase == (global ? 1_000_000 : 10_000), "layer \(l)")
        }
    }

    @Test func nextTokenProbabilitiesMatchLlamaCpp() throws {
        let check = ReferenceModelCheck(
            model: try Self.model(), reference: try TestFixtures.reference("gemma3/reference.json"),
            promptBatches: ReferenceModelCheck.llamaServerCheckpointBatches)
        let outcomes = try check.logits()
        #expect(outcomes.count == 3)
        for outcome in outcomes {
            print("gemma3 logits \(outcome.name): largest |Δp| \(outcome.largestDifference)")
            for p in outcome.probabilities.prefix(4) { print("  id \(p.id): ours \(p.ours) llama.cpp \(p.theirs)") }
            #expect(outcome.sameTop, "\(outcome.name): most likely token differs")
            for (id, difference) in outcome.probabilityDifferences {
                #expect(
                    difference <= Self.probabilityBound,
                    "\(outcome.name): token \(id) |Δp| = \(difference) (bound \(Self.probabilityBound))")
            }
        }
    }

    @Test func greedyContinuationsMatchLlamaCpp() throws {
        let check = ReferenceModelCheck(
            model: try Self.model(), reference: try TestFixtures.reference("gemma3/reference.json"),
            promptBatches: ReferenceModelCheck.llamaServerCheckpointBatches)
        let outcomes = try check.greedy()
        #expect(outcomes.count == 5)
        var identical = 0
        for outcome in outcomes {
            print(
                "gemma3 greedy \(outcome.name): "
                    + (outcome.identical
                        ? "identical (\(outcome.generated.count) tokens)"
                        : "differs at \(outcome.firstDifference), margin \(outcome.divergenceMargin ?? .nan)"))
            #expect(
                outcome.firstDifference >= 16,
                "\(outcome.name): got \(outcome.generated), llama.cpp \(outcome.expected)")
            if outcome.identical { identical += 1 }
        }
        // The issue asks for 4 of 5; all 5 are reached, and held.
        #expect(identical == 5, "only \(identical) of 5 greedy continuations identical")
    }
}
