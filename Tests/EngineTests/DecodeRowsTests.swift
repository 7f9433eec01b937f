import CKernels
import Foundation
import Testing

@testable import Engine

/// Drafted tokens verified in one pass (`LlamaModel.forward(decodeRows:)`) give every row the
/// bits of decoding the tokens one at a time: speculative decoding then answers exactly what
/// plain decoding answers, for any sampler.
@Suite(.serialized) struct DecodeRowsTests {
    enum Model: String, CaseIterable {
        case smollm2, smollm2Q8Cache, gemma3
        /// Every weight type the engine computes with (WideTinyModel: F16, BF16, Q4_0, Q4_1, Q5_0,
        /// Q5_1, Q8_0 and the K-quants, a Q8_0 output head): each product's decode rows.
        case everyWeightType
        /// Every matrix BF16 (output head too), whose micro-batch rows take another order than
        /// a row alone on the fast paths (tinyBLAS's, as llama.cpp): drafts must not.
        case bf16
    }

    private func load(_ model: Model) throws -> LlamaModel {
        switch model {
        case .smollm2:
            return try LlamaModel(gguf: try GGUFFile(path: try TestFixtures.requireModel()), threads: 2)
        case .smollm2Q8Cache:
            return try LlamaModel(
                gguf: try GGUFFile(path: try TestFixtures.requireModel()), threads: 2, kvCacheType: .q8_0)
        case .gemma3:
            return try GemmaReferenceTests.model()
        case .everyWeightType:
            let path = try WideTinyModel(seed: 35, embedding: .q8_0).write(contextLength: 512)
            return try LlamaModel(gguf: try GGUFFile(path: path), threads: 2)
        case .bf16:
            let all = [GGMLType](repeating: .bf16, count: 7)
            let path = try WideTinyModel(seed: 36, embedding: .bf16, layerTypes: [all, all]).write(contextLength: 512)
            return try LlamaModel(gguf: try GGUFFile(path: path), threads: 2)
        }
    }

    /// After short contexts (30 and 61: five rows cross a 32-key padding boundary) and a long one
    /// (past 256 positions, where a lone decode row takes the
    /// split attention kernel on two threads), five tokens decoded one by one and the same five
    /// in one pass: every logit equal, and the caches hold the same tokens.
    @Test(arguments: Model.allCases)
    func verifiedRowsAreDecodeStepsBitForBit(_ which: Model) throws {
        let model = try load(which)
        let v = model.config.vocabularySize
        // Token ids within the vocabulary (the tiny model has 64).
        let id = { (i: Int) in Int32(i % v) }
        let drafted: [Int32] = [400, 401, 977, 12, 5000].map(id)
        for contextLength in [20, 30, 61, 300] {
            let context: [Int32] = [2] + (1..<contextLength).map { id(1000 + ($0 * 37) % 4000) }
            let one = model.makeCache(capacity: context.count + drafted.count)
            let all = model.makeCache(capacity: context.count + drafted.count)
            var scratch = [Float](repeating: 0, count: v)
            try scratch.withUnsafeMutableBufferPointer { buffer in
                try model.forward(tokens: context[...], cache: one, logits: buffer)
                try model.forward(tokens: context[...], cache: all, logits: buffer)
            }
            var stepwise = [Float](repeating: 0, count: drafted.count * v)
            try stepwise.withUnsafeMutableBufferPointer { rows in
                for (t, token) in drafted.enumerated() {
                    try model.forward(
                        tokens: [token], cache: one,
                        logits: UnsafeMutableBufferPointer(rebasing: rows[(t * v)..<((t + 1) * v)]))
                }
            }
            var together = [Float](repeating: 0, count: drafted.count * v)
            try together.withUnsafeMutableBufferPointer { rows in
                try model.verify(tokens: drafted[...], sequence: all, rows: rows)
            }
            for t in 0..<drafted.count {
                let differing = (t * v..<(t + 1) * v).count { stepwise[$0].bitPattern != together[$0].bitPattern }
                #expect(differing == 0, "\(which) context \(contextLength) row \(t)")
            }
            #expect(one.tokens == all.tokens)
        }
    }

    /// The same tokens as prompt rows (one scored call) give other bits: the test can fail. (All
    /// BF16: its micro-batch rows take tinyBLAS's order on the fast paths, as llama.cpp's; the
    /// portable ones have one order, and there the bits must agree.)
    @Test(arguments: [Model.smollm2, .bf16])
    func promptRowsAreNotDecodeSteps(_ which: Model) throws {
        let model = try load(which)
        let v = model.config.vocabularySize
        let tokens: [Int32] = [1] + (1..<40).map { Int32((1000 + ($0 * 37) % 4000) % v) }
        var decodeRows = [Float](repeating: 0, count: tokens.count * v)
        try decodeRows.withUnsafeMutableBufferPointer {
            try model.verify(tokens: tokens[...], sequence: model.makeCache(capacity: 64), rows: $0)
        }
        var promptRows = [Float](repeating: 0, count: tokens.count * v)
        try promptRows.withUnsafeMutableBufferPointer {
            try model.forward(scoring: tokens[...], of: tokens.count, cache: model.makeCache(capacity: 64), rows: $0)
        }
        let differing = zip(decodeRows, promptRows).count { $0.bitPattern != $1.bitPattern }
        if which == .bf16 && ck_fast_paths_enabled() == 0 {
            #expect(differing == 0)
        } else {
            #expect(differing > 0)
        }
    }
}
