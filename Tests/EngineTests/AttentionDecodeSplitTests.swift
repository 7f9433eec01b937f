import CKernels
import Testing

@testable import Engine

/// One decoding token's attention split over the pool by keys and by lanes
/// (`ck_attention_decode_split`, which `ck_attention` runs deep in a context when the KV heads
/// cannot be shared evenly by the threads) must give exactly the bits of the kernel that does one
/// head at a time, for every group size, both head sizes, depths on and off the 64-key steps,
/// and sliding windows.
struct AttentionDecodeSplitTests {
    typealias Shape = AttentionGroupTests.Shape

    static let shapes: [Shape] = [1, 2, 3, 4, 8].flatMap { r in
        [64, 128].flatMap { d in [1, 3].map { Shape(ratio: r, headDim: d, nKV: $0) } }
    }

    @Test(arguments: shapes)
    func splitMatchesPerHeadBitForBit(shape: Shape) {
        let pool = ComputePool(threads: 2)
        for pos0 in [255, 256, 300, 511, 1000, 2047] {
            for window in [0, 200] {
                let total = pos0 + 1
                // Room for every head's scores and 64 lane sums over the two threads' rows.
                let stride = shape.nHead * (total + 16 + 64 * shape.headDim) / 2 + 64
                let seed = UInt64(shape.ratio * 1_000_000 + shape.headDim * 10_000 + shape.nKV * 1000 + pos0 + window)
                AttentionGroupTests.withArgs(shape, nTokens: 1, pos0: pos0, seed: seed, scratchStride: stride) {
                    base in
                    var args = base
                    args.window = Int32(window)
                    let name = "\(shape) kv heads \(shape.nKV) pos0 \(pos0) window \(window)"
                    let applies = withUnsafePointer(to: args) { ck_attention_decode_split_applies(pool.raw, $0) }
                    #expect(applies == 1, "\(name): the split does not apply")
                    let expected = AttentionGroupTests.output(args) {
                        ck_attention_units_per_head(&$0, 0, Int32(shape.nHead), 0)
                    }
                    let split = AttentionGroupTests.output(args) { ck_attention_decode_split(pool.raw, &$0) }
                    let viaAttention = AttentionGroupTests.output(args) { ck_attention(pool.raw, &$0) }
                    #expect(!expected.contains { $0.isNaN }, "\(name): reference left NaN")
                    if let i = AttentionGroupTests.firstDifference(split, expected) {
                        Issue.record("\(name): split[\(i)] = \(split[i]) vs per head \(expected[i])")
                    }
                    if let i = AttentionGroupTests.firstDifference(viaAttention, expected) {
                        Issue.record("\(name): ck_attention[\(i)] = \(viaAttention[i]) vs per head \(expected[i])")
                    }
                }
            }
        }
    }

    /// Where the threads share the KV heads evenly, a context is short, or a batch runs, the
    /// grouped units run as before.
    @Test func appliesOnlyWhereAThreadWouldIdle() {
        let pool = ComputePool(threads: 2)
        let cases: [(Shape, Int, Int, Bool)] = [
            (Shape(ratio: 3, headDim: 64, nKV: 3), 1, 2047, true),
            (Shape(ratio: 3, headDim: 64, nKV: 3), 1, 254, false),  // 255 keys
            (Shape(ratio: 3, headDim: 64, nKV: 2), 1, 2047, false),  // 2 KV heads on 2 threads
            (Shape(ratio: 3, headDim: 64, nKV: 3), 2, 2047, false),  // a batch
        ]
        for (shape, nTokens, pos0, expected) in cases {
            let stride = shape.nHead * (pos0 + nTokens + 16 + 64 * shape.headDim)
            AttentionGroupTests.withArgs(shape, nTokens: nTokens, pos0: pos0, seed: 1, scratchStride: stride) { args in
                let applies = withUnsafePointer(to: args) { ck_attention_decode_split_applies(pool.raw, $0) }
                #expect((applies == 1) == expected, "\(shape) kv \(shape.nKV) n_tokens \(nTokens) pos0 \(pos0)")
            }
        }
        let one = ComputePool(threads: 1)
        let shape = Shape(ratio: 3, headDim: 64, nKV: 3)
        AttentionGroupTests.withArgs(shape, nTokens: 1, pos0: 2047, seed: 1, scratchStride: 1 << 20) { args in
            #expect(withUnsafePointer(to: args) { ck_attention_decode_split_applies(one.raw, $0) } == 0)
        }
    }

    /// The real model deep in a context: decoding after a 300-token prompt on 2 threads (split)
    /// gives the bits of 1 thread (grouped units, nothing split), logits of every step.
    @Test func theModelDecodesTheSameBitsWithTheSplit() throws {
        let path = try TestFixtures.requireModel()
        let prompt = (0..<300).map { Int32(($0 * 7919 + 11) % 49_000 + 100) }
        func run(threads: Int) throws -> [[UInt32]] {
            let model = try LlamaModel(gguf: try GGUFFile(path: path), threads: threads)
            let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: model.config.vocabularySize)
            defer { logits.deallocate() }
            let cache = model.makeCache(capacity: prompt.count + 8)
            try ModelGoldenTests.prefill(model, prompt, cache, logits)
            var steps = [logits.map(\.bitPattern)]
            for _ in 0..<4 {
                try model.forward(tokens: [Int32(ModelGoldenTests.argmax(logits))], cache: cache, logits: logits)
                steps.append(logits.map(\.bitPattern))
            }
            return steps
        }
        let one = try run(threads: 1)
        let two = try run(threads: 2)
        for (step, (a, b)) in zip(one, two).enumerated() {
            let first = a.indices.first { a[$0] != b[$0] }
            #expect(first == nil, "step \(step): logit \(first ?? -1) differs between 1 and 2 threads")
        }
    }
}
