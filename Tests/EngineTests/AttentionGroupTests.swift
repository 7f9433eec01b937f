import CKernels
import Testing

@testable import Engine

/// The attention kernel that does the query heads of one KV head together must give exactly the
/// bits of the kernel that does one head at a time (`ck_attention_units_per_head`), for decode
/// (with and without keys past the last full 64) and for batches.
struct AttentionGroupTests {
    struct Shape: CustomStringConvertible {
        var ratio: Int
        var headDim: Int
        var nKV = 2
        var nHead: Int { ratio * nKV }
        var description: String { "ratio \(ratio) head_dim \(headDim)" }
    }

    static let shapes: [Shape] = [1, 2, 3, 4, 8].flatMap { r in [64, 128].map { Shape(ratio: r, headDim: $0) } }

    /// Runs `body` with args over random q and caches of `shape`; out and scratch are the
    /// caller's to fill.
    static func withArgs(
        _ shape: Shape, nTokens: Int, pos0: Int, seed: UInt64, scratchStride: Int,
        _ body: (ck_attention_args) -> Void
    ) {
        let kvDim = shape.nKV * shape.headDim
        let dim = shape.nHead * shape.headDim
        let total = pos0 + nTokens
        var rng = SeededRandom(seed: seed)
        let kCache = rng.floats(total * kvDim, 1.5).map(ReferenceKernels.floatToFP16)
        let vCache = rng.floats(total * kvDim, 1.5).map(ReferenceKernels.floatToFP16)
        // Large enough queries that some weights round to f16 subnormals or zero.
        let q = rng.floats(nTokens * dim, 3)
        var scratch = [Float](repeating: .nan, count: 2 * scratchStride)
        q.withUnsafeBufferPointer { qb in
            kCache.withUnsafeBufferPointer { kb in
                vCache.withUnsafeBufferPointer { vb in
                    scratch.withUnsafeMutableBufferPointer { sb in
                        body(
                            ck_attention_args(
                                q: qb.baseAddress!, q_stride: Int32(dim), k_cache: kb.baseAddress!,
                                v_cache: vb.baseAddress!, kv_stride: Int32(kvDim), n_head: Int32(shape.nHead),
                                n_kv_head: Int32(shape.nKV), head_dim: Int32(shape.headDim),
                                n_tokens: Int32(nTokens), pos0: Int32(pos0),
                                scale: 1 / Float(shape.headDim).squareRoot(), out: nil,
                                out_stride: Int32(dim), scratch: sb.baseAddress!,
                                scratch_stride: Int32(scratchStride), window: 0, call_rows: 0, sinks: nil))
                    }
                }
            }
        }
    }

    /// out of every token and head through `run`, which is given args with `out` set.
    static func output(_ args: ck_attention_args, _ run: (inout ck_attention_args) -> Void) -> [Float] {
        var out = [Float](repeating: .nan, count: Int(args.n_tokens * args.out_stride))
        out.withUnsafeMutableBufferPointer { ob in
            var a = args
            a.out = ob.baseAddress!
            run(&a)
        }
        return out
    }

    static func firstDifference(_ a: [Float], _ b: [Float]) -> Int? {
        a.indices.first { a[$0].bitPattern != b[$0].bitPattern }
    }

    @Test(arguments: shapes)
    func groupedMatchesPerHeadBitForBit(shape: Shape) {
        let pool = ComputePool(threads: 2)
        bothPaths { path in
            for nTokens in [1, 2, 5, 64] {
                for pos0 in [0, 31, 63, 64, 65, 200] {
                    let total = pos0 + nTokens
                    let stride = shape.ratio * (64 * shape.headDim + total + 32)
                    let seed = UInt64(shape.ratio * 1_000_000 + shape.headDim * 10_000 + nTokens * 1000 + pos0)
                    Self.withArgs(shape, nTokens: nTokens, pos0: pos0, seed: seed, scratchStride: stride) { args in
                        let units = nTokens * shape.nKV
                        let expected = Self.output(args) {
                            ck_attention_units_per_head(&$0, 0, Int32(nTokens * shape.nHead), 0)
                        }
                        let grouped = Self.output(args) { ck_attention_units(&$0, 0, Int32(units), 1) }
                        let pooled = Self.output(args) { ck_attention(pool.raw, &$0) }
                        let name = "\(path) \(shape) n_tokens \(nTokens) pos0 \(pos0)"
                        #expect(!expected.contains { $0.isNaN }, "\(name): reference left NaN")
                        if let i = Self.firstDifference(grouped, expected) {
                            Issue.record("\(name): grouped[\(i)] = \(grouped[i]) vs per head \(expected[i])")
                        }
                        if let i = Self.firstDifference(pooled, expected) {
                            Issue.record("\(name): pooled[\(i)] = \(pooled[i]) vs per head \(expected[i])")
                        }
                    }
                }
            }
        }
    }

    /// A scratch row too small for a group makes the units run their heads one by one: same bits.
    @Test func smallScratchFallsBackToPerHead() {
        let shape = Shape(ratio: 3, headDim: 64)
        for (nTokens, pos0) in [(1, 70), (5, 40)] {
            let stride = 64 * shape.headDim + pos0 + nTokens + 32
            Self.withArgs(shape, nTokens: nTokens, pos0: pos0, seed: 7, scratchStride: stride) { args in
                let expected = Self.output(args) {
                    ck_attention_units_per_head(&$0, 0, Int32(nTokens * shape.nHead), 0)
                }
                let grouped = Self.output(args) { ck_attention_units(&$0, 0, Int32(nTokens * shape.nKV), 0) }
                #expect(Self.firstDifference(grouped, expected) == nil, "n_tokens \(nTokens) pos0 \(pos0)")
            }
        }
    }
}
