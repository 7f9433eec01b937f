import Foundation
import Testing

@testable import Engine

/// Several sequences in one pass must give each exactly what it gets alone: batching shares
/// weight reads, never numerics.
@Suite(.serialized)
struct ModelBatchTests {
    final class Logits {
        let buffer: UnsafeMutableBufferPointer<Float>
        init(_ n: Int) {
            buffer = .allocate(capacity: n)
            buffer.initialize(repeating: 0)
        }
        deinit { buffer.deallocate() }
        var values: [Float] { Array(buffer) }
    }

    @Test func batchedDecodeIsBitIdenticalToSeparateDecodes() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let vocab = model.config.vocabularySize
        let cases = try #require(TestFixtures.reference("greedy.json")["cases"] as? [[String: Any]])
        let prompts = try cases.prefix(3).map { try #require($0["prompt_ids"] as? [Int]).map { Int32($0) } }
        let alone = prompts.map { _ in model.makeCache(capacity: 256) }
        let together = prompts.map { _ in model.makeCache(capacity: 256) }
        let aloneLogits = prompts.map { _ in Logits(vocab) }
        let togetherLogits = prompts.map { _ in Logits(vocab) }
        for i in prompts.indices {
            try ModelGoldenTests.prefill(model, prompts[i], alone[i], aloneLogits[i].buffer)
            try ModelGoldenTests.prefill(model, prompts[i], together[i], togetherLogits[i].buffer)
        }
        for step in 0..<12 {
            let next = aloneLogits.map { Int32(ModelGoldenTests.argmax($0.buffer)) }
            for i in prompts.indices {
                try model.forward(tokens: [next[i]], cache: alone[i], logits: aloneLogits[i].buffer)
            }
            try model.forward(
                batch: prompts.indices.map {
                    LlamaModel.BatchItem(tokens: [next[$0]], cache: together[$0], logits: togetherLogits[$0].buffer)
                })
            for i in prompts.indices {
                #expect(aloneLogits[i].values == togetherLogits[i].values, "sequence \(i), step \(step)")
                #expect(alone[i].tokens == together[i].tokens)
            }
        }
    }

    @Test func aPromptChunkCanShareAPassWithDecodes() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let vocab = model.config.vocabularySize
        let cases = try #require(TestFixtures.reference("greedy.json")["cases"] as? [[String: Any]])
        let first = try #require(cases[0]["prompt_ids"] as? [Int]).map { Int32($0) }
        let second = try #require(cases[1]["prompt_ids"] as? [Int]).map { Int32($0) }
        let a1 = model.makeCache(capacity: 128)
        let a2 = model.makeCache(capacity: 128)
        let b1 = model.makeCache(capacity: 128)
        let b2 = model.makeCache(capacity: 128)
        let la1 = Logits(vocab)
        let la2 = Logits(vocab)
        let lb1 = Logits(vocab)
        let lb2 = Logits(vocab)
        try ModelGoldenTests.prefill(model, first, a1, la1.buffer)
        try ModelGoldenTests.prefill(model, first, b1, lb1.buffer)
        let token = Int32(ModelGoldenTests.argmax(la1.buffer))
        // Alone: a decode step for sequence 1, the whole prompt of sequence 2.
        try model.forward(tokens: [token], cache: a1, logits: la1.buffer)
        try model.forward(tokens: second, cache: a2, logits: la2.buffer)
        // Together in one pass.
        try model.forward(batch: [
            .init(tokens: [token], cache: b1, logits: lb1.buffer),
            .init(tokens: second[...], cache: b2, logits: lb2.buffer),
        ])
        #expect(la1.values == lb1.values)
        #expect(la2.values == lb2.values)
    }

    @Test func badItemsFailBeforeAnythingRuns() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 1)
        let logits = Logits(model.config.vocabularySize)
        let ok = model.makeCache(capacity: 8)
        let full = model.makeCache(capacity: 1)
        #expect(throws: ModelError.self) {
            try model.forward(batch: [
                .init(tokens: [1], cache: ok, logits: logits.buffer),
                .init(tokens: [1, 2], cache: full, logits: logits.buffer),
            ])
        }
        #expect(ok.count == 0, "the valid item ran although the batch was refused")
        #expect(throws: ModelError.self) {
            try model.forward(batch: [
                .init(tokens: [1], cache: ok, logits: logits.buffer),
                .init(tokens: [2], cache: ok, logits: logits.buffer),
            ])
        }
    }
}
