import CKernels
import Testing

@testable import Engine

/// Prompt batches run in tiles of tokens (attention_tile.c): their outputs must be the bits of
/// the kernel that does one token and one head at a time (`ck_attention_units_per_head`), on the
/// AVX-512 and AVX2 builds of the tile kernel, for tiles cut short by the batch's end, with keys
/// from earlier chunks, with a sliding window; and close to the plain portable kernel.
struct AttentionTileTests {
    struct Case: CustomStringConvertible {
        var ratio: Int
        var headDim: Int
        var window = 0
        var description: String { "ratio \(ratio) head_dim \(headDim) window \(window)" }
    }

    static let cases: [Case] =
        [1, 2, 3, 4, 8].flatMap { r in [64, 128].map { Case(ratio: r, headDim: $0) } }
        + [
            Case(ratio: 4, headDim: 256), Case(ratio: 3, headDim: 64, window: 9),
            Case(ratio: 4, headDim: 256, window: 40),
        ]

    static func run(
        _ c: Case, nTokens: Int, pos0: Int, seed: UInt64, pool: ComputePool?
    ) -> (out: [Float], reference: [Float], tile: Int32) {
        let shape = AttentionGroupTests.Shape(ratio: c.ratio, headDim: c.headDim)
        let stride = Int(
            ck_attention_scratch_floats(
                Int32(shape.nHead), Int32(shape.nKV), Int32(c.headDim), Int32(pos0 + nTokens)))
        var result: (out: [Float], reference: [Float], tile: Int32) = ([], [], 0)
        AttentionGroupTests.withArgs(shape, nTokens: nTokens, pos0: pos0, seed: seed, scratchStride: stride) { base in
            var args = base
            args.window = Int32(c.window)
            result.tile = withUnsafePointer(to: args) { ck_attention_tile_size($0) }
            result.reference = AttentionGroupTests.output(args) {
                ck_attention_units_per_head(&$0, 0, Int32(nTokens * shape.nHead), 0)
            }
            result.out = AttentionGroupTests.output(args) { ck_attention(pool?.raw, &$0) }
        }
        return result
    }

    @Test(arguments: cases)
    func tilesMatchPerHeadBitForBit(c: Case) {
        let pool = ComputePool(threads: 2)
        bothPaths { path in
            for nTokens in [2, 7, 24, 64] {
                for pos0 in [0, 5, 64, 190] {
                    for usePool in [false, true] {
                        let seed = UInt64(c.ratio * 1_000_000 + c.headDim * 10_000 + nTokens * 1000 + pos0 + c.window)
                        let r = Self.run(c, nTokens: nTokens, pos0: pos0, seed: seed, pool: usePool ? pool : nil)
                        let name = "\(path) \(c) n_tokens \(nTokens) pos0 \(pos0) pool \(usePool)"
                        // The fast paths must take the tile kernel for these shapes, or this
                        // test would only compare the per-token kernel with itself.
                        if path != "portable" { #expect(r.tile > 0, "\(name): not tiled") }
                        #expect(!r.reference.contains { $0.isNaN }, "\(name): reference left NaN")
                        if let i = AttentionGroupTests.firstDifference(r.out, r.reference) {
                            Issue.record("\(name): tiled[\(i)] = \(r.out[i]) vs per head \(r.reference[i])")
                        }
                    }
                }
            }
        }
    }

    /// The tile kernel against the plain portable kernel (its own sum order, so within a
    /// tolerance): catches an error both fast kernels would share.
    @Test(arguments: [Case(ratio: 3, headDim: 64), Case(ratio: 4, headDim: 256, window: 40)])
    func tilesAgreeWithPortableKernel(c: Case) {
        let fast = Self.run(c, nTokens: 64, pos0: 100, seed: 99, pool: nil)
        #expect(fast.tile > 0)
        ck_set_fast_paths(0)
        defer { ck_set_fast_paths(1) }
        let plain = Self.run(c, nTokens: 64, pos0: 100, seed: 99, pool: nil)
        #expect(plain.tile == 0)
        var worst: Float = 0
        for i in fast.out.indices {
            worst = max(worst, abs(fast.out[i] - plain.out[i]) / max(abs(plain.out[i]), 0.05))
        }
        #expect(worst < 2e-3, "\(c): largest relative difference \(worst)")
    }

    /// A scratch row too small for a tile runs the batch token by token: same bits.
    @Test func smallScratchRunsTokenByToken() {
        let shape = AttentionGroupTests.Shape(ratio: 3, headDim: 64)
        // A long context: the tile's scores and weights outgrow the per-token unit's row.
        let nTokens = 20, pos0 = 2000
        let stride = shape.ratio * (64 * shape.headDim + pos0 + nTokens + 32)
        AttentionGroupTests.withArgs(shape, nTokens: nTokens, pos0: pos0, seed: 3, scratchStride: stride) { args in
            #expect(withUnsafePointer(to: args) { ck_attention_tile_size($0) } == 0)
            let expected = AttentionGroupTests.output(args) {
                ck_attention_units_per_head(&$0, 0, Int32(nTokens * shape.nHead), 0)
            }
            let got = AttentionGroupTests.output(args) { ck_attention(nil, &$0) }
            #expect(AttentionGroupTests.firstDifference(got, expected) == nil)
        }
    }
}
