import Foundation
import Testing

@testable import Engine

/// The real models with `kv_cache_type` q8_0 against llama.cpp's f16-cache references: how far
/// an 8-bit cache moves greedy answers and next-token probabilities (the issue asks to measure
/// it and document by how much). The bounds below are what q8_0 reaches here, kept so that a
/// change that makes the cache worse fails.
@Suite(.serialized)
struct KVCacheQ8ModelTests {
    @Test func smolLM2GreedyAndProbabilities() throws {
        let model = try LlamaModel(
            gguf: try GGUFFile(path: try TestFixtures.requireModel()), threads: 2, kvCacheType: .q8_0)
        // 30 layers × keys and values × 192 values: 6 blocks of 34 bytes, against 384 bytes in f16.
        #expect(model.kvBytesPerToken == 30 * 2 * 6 * 34)
        #expect(model.kvBytesPerToken * 100 / (30 * 2 * 192 * 2) == 53)
        let greedy = try TestFixtures.reference("greedy.json")
        let cases = try #require(greedy["cases"] as? [[String: Any]])
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: model.config.vocabularySize)
        defer { logits.deallocate() }
        var report: [String] = []
        var identical = 0
        for c in cases {
            let prompt = try #require(c["prompt_ids"] as? [Int]).map { Int32($0) }
            let expected = try #require(c["generated_ids"] as? [Int])
            let generated = try ModelGoldenTests.greedy(model, prompt: prompt, count: expected.count, logits: logits)
            let first =
                zip(generated, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(generated.count, expected.count)
            report.append("\(c["name"] as? String ?? "?"): \(first)/\(expected.count)")
            #expect(first >= 2, "\(c["name"] as? String ?? "?"): \(generated) against \(expected)")
            if generated == expected { identical += 1 }
        }
        // Measured 2026-12-02 (AVX-512 machine): 3 of 5 identical, the others differ from token 5 and 7.
        #expect(identical >= 1)
        print("q8_0 SmolLM2 greedy, tokens identical before the first difference: \(report.joined(separator: ", "))")

        let probabilities = try TestFixtures.reference("logits.json")
        var worst = 0.0
        var sameTop = 0
        let logitCases = try #require(probabilities["cases"] as? [[String: Any]])
        for c in logitCases {
            let prompt = try #require(c["prompt_ids"] as? [Int]).map { Int32($0) }
            let top = try #require(c["top10"] as? [[String: Any]])
            let cache = model.makeCache(capacity: prompt.count)
            try ModelGoldenTests.prefill(model, prompt, cache, logits)
            let p = ReferenceKernels.softmax(Array(logits))
            for entry in top {
                worst = max(
                    worst, abs(Double(p[try #require(entry["id"] as? Int)]) - (try #require(entry["prob"] as? Double))))
            }
            if ModelGoldenTests.argmax(logits) == top.first?["id"] as? Int { sameTop += 1 }
        }
        print("q8_0 SmolLM2 logits: same top token in \(sameTop)/\(logitCases.count), largest |Δp| \(worst)")
        // Measured: 3 of 3 and 0.037 (f16: under 0.002).
        #expect(sameTop == logitCases.count)
        #expect(worst < 0.06)
    }

    @Test func gemma3GreedyAndProbabilities() throws {
        guard FileManager.default.fileExists(atPath: GemmaReferenceTests.modelPath) else {
            throw FixtureError("Gemma 3 missing at \(GemmaReferenceTests.modelPath): run `make model`")
        }
        let model = try LlamaModel(
            gguf: try GGUFFile(path: GemmaReferenceTests.modelPath), threads: 2, contextLimit: 2048,
            kvCacheType: .q8_0)
        let check = ReferenceModelCheck(
            model: model, reference: try TestFixtures.reference("gemma3/reference.json"),
            promptBatches: ReferenceModelCheck.llamaServerCheckpointBatches)
        let greedy = try check.greedy()
        print(
            "q8_0 Gemma 3 greedy, tokens identical before the first difference: "
                + greedy.map { "\($0.name): \($0.firstDifference)/\($0.expected.count)" }.joined(separator: ", "))
        for outcome in greedy { #expect(outcome.firstDifference >= 2, "\(outcome.name)") }
        // Measured 2026-12-02: 2 of 5 identical, the others differ from token 4, 10 and 10.
        #expect(greedy.filter(\.identical).count >= 1)
        let logits = try check.logits()
        print(
            "q8_0 Gemma 3 logits: same top token in \(logits.filter(\.sameTop).count)/\(logits.count), largest |Δp| \(logits.map(\.largestDifference).max() ?? 0)"
        )
        // Measured: 3 of 3 and 0.029 (f16: 0.000075).
        #expect(logits.allSatisfy { $0.sameTop })
        #expect(logits.allSatisfy { $0.largestDifference < 0.06 })
    }
}
