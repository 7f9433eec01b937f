import CKernels
import Testing

@testable import Engine

/// Q5_1's interleaved form (eight rows per block, fifth bits as byte masks; interleave_q5_1.c)
/// against the file layout it was made from: every output bit for bit the per-row fast kernel's
/// (ggml's Q5_1 order), and within rounding of the Swift reference (dequantized, summed in
/// Double); on the eight-lane VNNI kernels (1-4 tokens), the 16-lane ones (5 tokens or more, an
/// odd last group read twice), the AVX2 ones (tokens in twos over passes of rows), the portable
/// one, with the pool's row chunks and without.
@Suite(.serialized)
struct InterleavedQ5_1Tests {
    static let q5_1 = Int32(GGMLType.q5_1.rawValue)

    /// Rows with every nibble and fifth-bit pattern (random bytes, sized scales and mins).
    static func file(rows: Int, k: Int, rng: inout SeededRandom) -> [UInt8] {
        RandomWeights.matrix(.q5_1, rows: rows, columns: k, scale: 0.4, rng: &rng)
    }

    static func interleaved(_ file: [UInt8], rows: Int, k: Int) -> (type: Int32, bytes: [UInt8], groupBytes: Int) {
        let groupBytes = ck_interleaved_group_bytes(q5_1, Int32(k))
        var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
        let type = file.withUnsafeBytes { src in
            packed.withUnsafeMutableBytes { dst in
                ck_interleave(q5_1, src.baseAddress!, file.count / rows, Int32(rows), Int32(k), dst.baseAddress!)
            }
        }
        return (type, packed, groupBytes)
    }

    @Test func theFormKeepsTheFilesBytesPerRow() {
        for k in [32, 96, 2048, 8192] {
            #expect(ck_interleaved_group_bytes(Self.q5_1, Int32(k)) == 8 * 24 * (k / 32), "k=\(k)")
        }
        #expect(ck_interleaved_group_bytes(Self.q5_1, 48) == 0, "k not a multiple of 32")
        let src = [UInt8](repeating: 0, count: 24 * 12)
        var dst = [UInt8](repeating: 0, count: 4096)
        let refused = src.withUnsafeBytes { s in
            dst.withUnsafeMutableBytes { d in
                [
                    ck_interleave(Self.q5_1, s.baseAddress!, 24, 12, 32, d.baseAddress!),
                    ck_interleave(Self.q5_1, s.baseAddress!, 24, 8, 48, d.baseAddress!),
                ]
            }
        }
        #expect(refused == [-1, -1])
        // The loader makes it where the VNNI kernels (AVX-512 BW too) or the AVX2 ones read it.
        #expect(
            ck_interleaving_pays(Self.q5_1)
                == (InterleavedKernelTests.cpuHasVNNIAndBW || ck_cpu_has_avx2_fma() != 0 ? 1 : 0))
    }

    @Test func interleavedProductsAreThePerRowProducts() throws {
        let pool = ComputePool(threads: 2)
        var rng = SeededRandom(seed: 5151_1)
        for (rows, k) in [(8, 32), (24, 96), (40, 576), (136, 1536), (16, 64), (200, 2048)] {
            let file = Self.file(rows: rows, k: k, rng: &rng)
            let rowBytes = file.count / rows
            let (packedType, packed, groupBytes) = Self.interleaved(file, rows: rows, k: k)
            #expect(packedType == Int32(CK_TYPE_Q5_1_X8))
            for n in 1...10 {
                var activations: [UInt8] = []
                var reference = [Float](repeating: 0, count: n * rows)
                for t in 0..<n {
                    // Full-scale activations (bytes ±127) in some tokens, small ones in others.
                    var x = rng.floats(k, t % 2 == 0 ? 2 : 0.01)
                    x[0] = 3
                    let q = ReferenceKernels.quantizeQ8_1(x)
                    activations += q
                    for r in 0..<rows {
                        reference[t * rows + r] = ReferenceKernels.dot(
                            weights: Array(file[r * rowBytes..<(r + 1) * rowBytes]), type: .q5_1, activations: q, k: k)
                    }
                }
                // The per-row fast kernel on the file layout (ggml's rounding).
                let perRow = file.withUnsafeBytes { w in
                    InterleavedKernelTests.product(
                        type: Self.q5_1, weights: w.baseAddress!, stride: rowBytes, rows: rows, k: k,
                        activations: activations, n: n, pool: nil)
                }
                try bothPaths { path in
                    for wide in [true, false] where wide || n >= 5 {
                        ck_set_wide_groups(wide ? 1 : 0)
                        defer { ck_set_wide_groups(1) }
                        for usePool in [false, true] {
                            let got = packed.withUnsafeBytes { w in
                                InterleavedKernelTests.product(
                                    type: packedType, weights: w.baseAddress!, stride: groupBytes, rows: rows, k: k,
                                    activations: activations, n: n, pool: usePool ? pool : nil)
                            }
                            let what = "\(path) wide=\(wide) rows=\(rows) k=\(k) n=\(n) pool=\(usePool)"
                            for i in got.indices {
                                try #require(
                                    got[i].bitPattern == perRow[i].bitPattern,
                                    "\(what): out \(i) \(got[i]) vs per-row \(perRow[i])")
                                try #require(
                                    close(got[i], reference[i], rel: 1e-5, abs: 1e-4),
                                    "\(what): out \(i) \(got[i]) vs reference \(reference[i])")
                            }
                        }
                    }
                }
            }
        }
    }
}
