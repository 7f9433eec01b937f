import CKernels
import Foundation
import Testing

@testable import Engine

/// MXFP4's interleaved form (eight rows per block, made at load time; interleave_mxfp4.c) against
/// llama.cpp's products (the MXFP4ProductTests fixture) and against the per-row kernel, which
/// gives llama.cpp's bits: every path (AVX-512 VNNI, AVX2, portable) bit for bit, over odd and
/// even group counts (the VNNI kernel pairs groups), odd and even block counts (ggml's kernel
/// takes blocks in pairs, an odd last one in its scalar tail), 1...9 tokens, and every scale
/// byte llama.cpp accepts (0...254: it refuses 255).
@Suite(.serialized)
struct MXFP4InterleavedTests {
    static let form = Int32(CK_TYPE_MXFP4_X8)
    static let mxfp4 = Int32(GGMLType.mxfp4.rawValue)

    /// The interleaved copy of `rows` file-layout rows of `k` values, and its group stride.
    static func interleaved(_ file: [UInt8], rows: Int, k: Int) throws -> (bytes: [UInt8], stride: Int) {
        let rowBytes = GGMLType.mxfp4.rowBytes(elements: k)!
        let stride = ck_interleaved_group_bytes(mxfp4, Int32(k))
        #expect(stride == 8 * rowBytes, "the form keeps MXFP4's 17 bytes per row and block")
        var packed = [UInt8](repeating: 0, count: rows / 8 * stride)
        let type = file.withUnsafeBytes { src in
            packed.withUnsafeMutableBytes { dst in
                ck_interleave(mxfp4, src.baseAddress!, rowBytes, Int32(rows), Int32(k), dst.baseAddress!)
            }
        }
        try #require(type == form)
        return (packed, stride)
    }

    static func q8_0(_ rng: inout SeededRandom, k: Int, n: Int) -> [UInt8] {
        (0..<n).flatMap { _ in ReferenceKernels.quantizeQ8_0(rng.floats(k, 2)) }
    }

    static func same(_ a: Float, _ b: Float) -> Bool { a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN) }

    /// llama.cpp's own products (8 rows, K = 512 and 544, 1, 4 and 9 tokens), the rows repeated
    /// three times so that the VNNI kernel's pair of groups and its odd last group both run.
    @Test func interleavedProductsAreLlamaCppsBits() throws {
        let (rows, cases) = try MXFP4ProductTests.load()
        for c in cases {
            let file = c.weights + c.weights + c.weights
            let (packed, stride) = try Self.interleaved(file, rows: 3 * rows, k: c.k)
            let (x, _) = ProductFixtures.q8_0Rows(c.activations, k: c.k, n: c.n)
            bothPaths { path in
                let y = packed.withUnsafeBytes { w in
                    InterleavedKernelTests.product(
                        type: Self.form, weights: w.baseAddress!, stride: stride, rows: 3 * rows, k: c.k,
                        activations: x, n: c.n, pool: nil)
                }
                var differing = 0
                for t in 0..<c.n {
                    for r in 0..<3 * rows {
                        let theirs = Float(bitPattern: c.products[r % rows + t * rows])
                        if y[t * 3 * rows + r].bitPattern != theirs.bitPattern { differing += 1 }
                    }
                }
                #expect(differing == 0, "\(path) k=\(c.k) n=\(c.n): \(differing) of \(3 * rows * c.n) differ")
            }
        }
    }

    /// Random codes with every scale byte 0...254 in every lane (row r, block b: (7r + 3b + s)
    /// mod 255 for a per-shape s), against the per-row kernel on the file layout.
    @Test func interleavedProductsAreThePerRowBits() throws {
        let pool = ComputePool(threads: 2)
        var rng = SeededRandom(seed: 3939)
        var scalesSeen = Set<UInt8>()
        // (rows, k): one block (the tail alone), two, odd and even block counts, odd and even
        // group counts, gpt-oss-20b's width.
        for (index, (rows, k)) in [(8, 32), (24, 64), (40, 544), (16, 2880), (136, 96), (56, 2880)].enumerated() {
            var file = RandomWeights.matrix(.mxfp4, rows: rows, columns: k, scale: 0.4, rng: &rng)
            let rowBytes = file.count / rows
            for r in 0..<rows {
                for b in 0..<k / 32 {
                    let e = UInt8((7 * r + 3 * b + 61 * index) % 255)
                    file[r * rowBytes + b * 17] = e
                    scalesSeen.insert(e)
                }
            }
            let (packed, stride) = try Self.interleaved(file, rows: rows, k: k)
            for n in k > 1000 ? [1, 2, 3, 5, 8] : Array(1...9) {
                let x = Self.q8_0(&rng, k: k, n: n)
                let perRow = file.withUnsafeBytes { w in
                    InterleavedKernelTests.product(
                        type: Self.mxfp4, weights: w.baseAddress!, stride: rowBytes, rows: rows, k: k, activations: x,
                        n: n, pool: nil)
                }
                try bothPaths { path in
                    for usePool in [false, true] {
                        let got = packed.withUnsafeBytes { w in
                            InterleavedKernelTests.product(
                                type: Self.form, weights: w.baseAddress!, stride: stride, rows: rows, k: k,
                                activations: x, n: n, pool: usePool ? pool : nil)
                        }
                        for i in got.indices {
                            try #require(
                                Self.same(got[i], perRow[i]),
                                "\(path) rows=\(rows) k=\(k) n=\(n) pool=\(usePool): out \(i) \(got[i]) vs \(perRow[i])"
                            )
                        }
                    }
                }
            }
        }
        #expect(scalesSeen.count == 255)
    }

    /// The form exists where the CPU has its kernels, for whole groups of eight rows only: other
    /// row counts stay in the file layout (the per-row kernel).
    @Test func theFormIsMadeForWholeGroupsOnly() {
        let pays = ck_cpu_has_avx2_fma() != 0 || InterleavedKernelTests.cpuHasVNNI
        #expect(ck_interleaving_pays(Self.mxfp4) == (pays ? 1 : 0))
        #expect(ck_interleaved_group_bytes(Self.mxfp4, 48) == 0)
        let k = 64
        let bytes = [UInt8](repeating: 0x11, count: 16 * 34)
        var out = [UInt8](repeating: 0, count: 16 * 34)
        bytes.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                #expect(ck_interleave(Self.mxfp4, src.baseAddress!, 34, 12, Int32(k), dst.baseAddress!) == -1)
                #expect(ck_interleave(Self.mxfp4, src.baseAddress!, 34, 16, Int32(k), dst.baseAddress!) == Self.form)
            }
            let ragged = WeightMatrix(
                name: "w", type: .mxfp4, columns: k, rows: 12, data: src.baseAddress!, rowBytes: 34)
            #expect(ragged.interleavedByteCount == 0)
            let whole = WeightMatrix(
                name: "w", type: .mxfp4, columns: k, rows: 16, data: src.baseAddress!, rowBytes: 34)
            #expect(whole.interleavedByteCount == (pays ? 16 * 34 : 0))
        }
    }
}
