import Foundation
import Testing

@testable import Engine

/// The `qwen2`, `qwen3` and Llama 3 (`llama` with `rope_freqs`) layers against llama.cpp on the
/// tiny random-weight models in `Tests/Fixtures/reference/tiny/` (no real weights of these families can
/// be fetched here). Random weights make near-ties likelier than in a trained model, so the
/// next-token probabilities are the primary check; greedy runs must agree up to a near-tie.
///
/// The tolerance is 0.01 on each top-10 probability, not the 0.002 of the real models: an exact
/// float64 forward pass of these files (`scripts/float64-forward.py`: numpy over PyPI `gguf`'s dequantized tensors) differs
/// from llama.cpp's answers by up to 0.0046 itself (its f16 KV cache and, in its 2026-10 build,
/// flash attention's f16 accumulation), and inferd differs from llama.cpp by at most 0.006.
/// What these cases cannot see (RoPE frequency factors at positions below 8) is checked by
/// `KernelTests.ropeMatchesReference`.
@Suite(.serialized)
struct ModelArchitectureTests {
    static func tinyModel(_ name: String) throws -> (LlamaModel, [String: Any]) {
        let root = TestFixtures.referenceRoot.appendingPathComponent("tiny")
        let path = root.appendingPathComponent("\(name).gguf").path
        guard FileManager.default.fileExists(atPath: path) else { throw FixtureError("tiny model missing at \(path)") }
        let model = try LlamaModel(gguf: try GGUFFile(path: path), threads: 2)
        return (model, try TestFixtures.reference("tiny/\(name).json"))
    }

    @Test(arguments: [
        ("tiny-qwen2", Architecture.qwen2), ("tiny-qwen3", Architecture.qwen3), ("tiny-llama3", Architecture.llama),
    ])
    func tinyModelMatchesLlamaCpp(name: String, architecture: Architecture) throws {
        let (model, reference) = try Self.tinyModel(name)
        #expect(model.config.architecture == architecture)
        let check = ReferenceModelCheck(model: model, reference: reference)
        for outcome in try check.logits() {
            print("\(name) logits \(outcome.name): largest |Δp| \(outcome.largestDifference)")
            #expect(outcome.sameTop, "\(name) \(outcome.name): most likely token differs")
            for (id, difference) in outcome.probabilityDifferences {
                #expect(difference <= 0.01, "\(name) \(outcome.name): token \(id) |Δp| = \(difference)")
            }
        }
        for outcome in try check.greedy() {
            print(
                "\(name) greedy \(outcome.name): "
                    + (outcome.identical
                        ? "identical"
                        : "differs at \(outcome.firstDifference), margin \(outcome.divergenceMargin ?? .nan)"))
            // Identical, or apart only after a near-tie (our choice ahead of llama.cpp's by < 0.05).
            let nearTie = (outcome.divergenceMargin ?? .infinity) < 0.05
            #expect(
                outcome.identical || nearTie,
                "\(name) \(outcome.name): got \(outcome.generated), llama.cpp \(outcome.expected), margin \(String(describing: outcome.divergenceMargin))"
            )
        }
    }

    @Test func tinyQwen3HasAQueryWiderThanTheModel() throws {
        let (model, _) = try Self.tinyModel("tiny-qwen3")
        #expect(model.config.embeddingLength == 64)
        #expect(model.config.headDim == 32)
        #expect(model.config.queryDim == 128)
    }

    @Test func llama3ReadsItsRopeFrequencyFactors() throws {
        let (model, _) = try Self.tinyModel("tiny-llama3")
        let factors = try #require(model.ropeFrequencyFactors)
        #expect(factors.count == model.config.ropeDimensionCount / 2)
        #expect(factors.first == 1 && factors.last == 8)
    }
}
