import Foundation
import Testing

@testable import Engine

/// A prompt fed in pieces (the engine's 64-token steps, the rest after a reused prefix) takes
/// the arithmetic of the whole prompt in one call, as llama.cpp computes it: the micro-batch
/// that decides K-quant product orders and flash attention tiles is the prompt's, not the
/// piece's. Fed as separate calls, a short last piece took a short call's arithmetic.
@Suite(.serialized) struct PromptPieceTests {
    /// The logits after `prompt` fed in `pieces` (their ends), each piece as a call of its own
    /// (`prompt: false`) or as a piece of the whole prompt.
    private func logits(_ model: LlamaModel, _ prompt: [Int32], ends: [Int], asPieces: Bool) throws -> [Float] {
        let cache = model.makeCache(capacity: prompt.count)
        var out = [Float](repeating: 0, count: model.config.vocabularySize)
        var start = 0
        for end in ends {
            try out.withUnsafeMutableBufferPointer {
                if asPieces {
                    try model.forward(prompt: prompt[start..<end], of: prompt.count, cache: cache, logits: $0)
                } else {
                    try model.forward(tokens: prompt[start..<end], cache: cache, logits: $0)
                }
            }
            start = end
        }
        return out
    }

    private func differing(_ a: [Float], _ b: [Float]) -> Int {
        zip(a, b).filter { $0.bitPattern != $1.bitPattern }.count
    }

    /// Gemma 3 (Q4_K_M: K-quant products, flash attention tiled from 64 rows): a 70-token
    /// prompt in the engine's pieces 64 + 6 gives the one-call logits bit for bit; as two calls
    /// its last 6 rows take row-by-row attention and the 4-row product orders, and they differ.
    @Test func gemmaPiecesGiveTheWholePromptsBits() throws {
        let model = try GemmaReferenceTests.model()
        let prompt: [Int32] = [2] + (1..<70).map { Int32(1000 + $0 * 37) }
        let whole = try logits(model, prompt, ends: [70], asPieces: false)
        let pieces = try logits(model, prompt, ends: [64, 70], asPieces: true)
        #expect(differing(whole, pieces) == 0)
        // A piece that starts off a chunk boundary (a session's kept tokens) is still cut at the
        // prompt's boundaries: 0..<40, then 40..<64 and 64..<70.
        let offCut = try logits(model, prompt, ends: [40, 70], asPieces: true)
        #expect(differing(whole, offCut) == 0)
        let calls = try logits(model, prompt, ends: [64, 70], asPieces: false)
        #expect(
            differing(whole, calls) > 0, "two calls were expected to differ from one (else this test shows nothing)")
    }

    /// The default model (Q4_1, no batch-dependent orders): pieces of a 130-token prompt, cut
    /// anywhere on the way, give the one-call bits too.
    @Test func smolLM2PiecesGiveTheWholePromptsBits() throws {
        let model = try LlamaModel(gguf: try GGUFFile(path: try TestFixtures.requireModel()), threads: 2)
        let prompt: [Int32] = [1] + (1..<130).map { Int32(200 + $0 * 53) }
        let whole = try logits(model, prompt, ends: [130], asPieces: false)
        for ends in [[64, 128, 130], [23, 70, 130], [129, 130]] {
            let pieces = try logits(model, prompt, ends: ends, asPieces: true)
            #expect(differing(whole, pieces) == 0, "pieces ending at \(ends)")
        }
    }

    /// A piece must lie inside its prompt.
    @Test func aPieceOutsideItsPromptIsRefused() throws {
        let model = try LlamaModel(gguf: try GGUFFile(path: try TestFixtures.requireModel()), threads: 1)
        let prompt: [Int32] = [1, 2, 3, 4, 5]
        var out = [Float](repeating: 0, count: model.config.vocabularySize)
        #expect(throws: ModelError.self) {
            try out.withUnsafeMutableBufferPointer {
                try model.forward(prompt: prompt[2..<5], of: 4, cache: model.makeCache(capacity: 8), logits: $0)
            }
        }
    }
}
