import Testing

@testable import Engine

/// Logits of whole models, for tests that hold two loads of one file to the same bits.
enum ModelLogits {
    /// The logits after `tokens`, fed at once into `cache`.
    static func after(_ tokens: [Int32], _ model: LlamaModel, _ cache: KVCache) throws -> [Float] {
        var out = [Float](repeating: .nan, count: model.config.vocabularySize)
        try out.withUnsafeMutableBufferPointer { try model.forward(tokens: tokens, cache: cache, logits: $0) }
        return out
    }

    /// Expects `a` and `b` to give the same logits bit for bit: after `tokens` as one batch (a
    /// prompt's orders), then after each of the first `stepped` tokens fed one at a time
    /// (decode's one-token orders).
    static func expectSame(
        _ a: LlamaModel, _ b: LlamaModel, tokens: [Int32], stepped: Int, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let batchA = try after(tokens, a, a.makeCache(capacity: 32))
        let batchB = try after(tokens, b, b.makeCache(capacity: 32))
        #expect(batchA.map(\.bitPattern) == batchB.map(\.bitPattern), "\(label): batch", sourceLocation: sourceLocation)
        let cacheA = a.makeCache(capacity: 32)
        let cacheB = b.makeCache(capacity: 32)
        for (i, token) in tokens.prefix(stepped).enumerated() {
            let stepA = try after([token], a, cacheA)
            let stepB = try after([token], b, cacheB)
            #expect(
                stepA.map(\.bitPattern) == stepB.map(\.bitPattern), "\(label): token \(i)",
                sourceLocation: sourceLocation)
        }
    }
}
