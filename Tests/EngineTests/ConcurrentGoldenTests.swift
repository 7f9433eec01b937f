import Foundation
import Testing

@testable import Engine

/// Concurrent generations share batched decode passes; each must still produce exactly what
/// llama.cpp produced for it alone.
@Suite(.serialized)
struct ConcurrentGoldenTests {
    @Test func fiveGreedyCasesAtOnceMatchTheReference() async throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let tokenizer = try Tokenizer(gguf: gguf)
        let runner = GenerationRunner(
            predictor: model, endOfGeneration: tokenizer.endOfGenerationIDs,
            makeDecoder: { StreamingDetokenizer(tokenizer: tokenizer) })
        defer { runner.shutdown() }
        let cases = try #require(TestFixtures.reference("greedy.json")["cases"] as? [[String: Any]])
        let inputs = try cases.map { c -> (String, [Int32], [Int32], Int) in
            (
                c["name"] as? String ?? "?", try #require(c["prompt_ids"] as? [Int]).map { Int32($0) },
                try #require(c["generated_ids"] as? [Int]).map { Int32($0) }, try #require(c["n_generated"] as? Int)
            )
        }
        let results = try await withThrowingTaskGroup(of: (Int, [Int32]).self) { group in
            for (i, input) in inputs.enumerated() {
                group.addTask {
                    let r = try await runner.generate(
                        GenerationRequest(promptTokens: input.1, maxTokens: input.3, sampling: .greedy))
                    return (i, r.tokens)
                }
            }
            var out = [[Int32]](repeating: [], count: inputs.count)
            for try await (i, tokens) in group { out[i] = tokens }
            return out
        }
        var identical = 0
        for (i, input) in inputs.enumerated() {
            if results[i] == input.2 { identical += 1 }
            #expect(Array(results[i].prefix(16)) == Array(input.2.prefix(16)), "case \(input.0)")
        }
        #expect(identical >= 4, "\(identical)/5 identical when run concurrently")
    }
}
