import CKernels
import Foundation
import Testing

@testable import Engine

/// BF16 matrix products against llama.cpp's own (`Tests/Fixtures/reference/bf16-products.json`,
/// made by `scripts/llama-cpp-float-products.cpp BF16` with ggml's CPU backend at commit 0c1e57098 on a
/// CPU with AVX512-BF16): weight matrices of K = 512, 544 and 528 values by 8 rows and of 512 by 6
/// rows times 1, 4 and 9 activation rows. llama.cpp rounds the activations to bf16 first and then,
/// on such a CPU, multiplies with vdpbf16ps in ggml_vec_dot_bf16's order (one row; widths off
/// whole steps of 32; row counts off multiples of 4) or tinyBLAS's (several rows). The portable
/// emulation of that arithmetic must give the fixture's bits on every CPU; the engine's products
/// must give them on a CPU with AVX512-BF16, and come within float noise of them elsewhere.
@Suite(.serialized)
struct BF16ProductTests {
    struct Matrix {
        let k: Int
        let rows: Int
        let weights: [UInt16]
        let products: [(n: Int, y: [UInt32])]
    }

    struct Fixture {
        let type: GGMLType
        let stride: Int
        let activations: [Float]
        let matrices: [Matrix]

        /// The first `n` activation rows, the first `k` values of each, rounded to the weights'
        /// type as a pass rounds them (`ck_rows_quantize` in the BF16 or F16 form).
        func rounded(k: Int, n: Int) -> [Float] {
            var x = [Float]()
            for t in 0..<n { x += activations[t * stride..<t * stride + k] }
            var y = [Float](repeating: .nan, count: x.count)
            let status = ck_rows_quantize(nil, Int32(type.rawValue), x, Int32(k), &y, 4 * k, Int32(n))
            precondition(status == 0)
            return y
        }
    }

    /// A fixture of `scripts/llama-cpp-float-products.cpp` (same layout for BF16 and F16).
    static func load(_ name: String = "bf16-products.json", type: GGMLType = .bf16) throws -> Fixture {
        let json = try TestFixtures.reference(name)
        var matrices: [Matrix] = []
        for m in try #require(json["matrices"] as? [[String: Any]]) {
            let hex = Array(try #require(m["weights"] as? String).utf8)
            let weights = stride(from: 0, to: hex.count, by: 4).map {
                UInt16(String(decoding: hex[$0..<$0 + 4], as: UTF8.self), radix: 16)!
            }
            var products: [(n: Int, y: [UInt32])] = []
            for p in try #require(m["products"] as? [[String: Any]]) {
                products.append(
                    (try #require(p["n"] as? Int), try #require(p["y"] as? [String]).map { UInt32($0, radix: 16)! }))
            }
            matrices.append(
                Matrix(
                    k: try #require(m["k"] as? Int), rows: try #require(m["rows"] as? Int), weights: weights,
                    products: products))
        }
        return Fixture(
            type: type, stride: try #require(json["stride"] as? Int),
            activations: try #require(json["activations"] as? [Double]).map { Float($0) }, matrices: matrices)
    }

    /// llama.cpp's choice: tinyBLAS for several rows of a width in whole steps of 32 and a matrix
    /// of a multiple of 4 rows.
    static func gemm(k: Int, rows: Int, n: Int) -> Bool { n > 1 && k % 32 == 0 && rows % 4 == 0 }

    /// The emulated product, token-major.
    static func reference(_ w: [UInt16], rows: Int, k: Int, x: [Float], n: Int, gemm: Bool) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        w.withUnsafeBufferPointer { wb in
            x.withUnsafeBufferPointer { xb in
                for t in 0..<n {
                    for r in 0..<rows {
                        y[t * rows + r] = ck_dot_bf16_pairs_reference(
                            Int32(k), wb.baseAddress! + r * k, xb.baseAddress! + t * k, gemm ? 1 : 0)
                    }
                }
            }
        }
        return y
    }

    static func differing(_ y: [Float], _ theirs: [UInt32]) -> Int {
        zip(y, theirs).filter { $0.bitPattern != $1 }.count
    }

    @Test func theEmulationGivesLlamaCppsBitsOnEveryCPU() throws {
        let f = try Self.load()
        #expect(f.matrices.count == 4)
        var otherOrderDiffers = 0
        for m in f.matrices {
            for (n, theirs) in m.products {
                let x = f.rounded(k: m.k, n: n)
                let gemm = Self.gemm(k: m.k, rows: m.rows, n: n)
                let y = Self.reference(m.weights, rows: m.rows, k: m.k, x: x, n: n, gemm: gemm)
                let bad = Self.differing(y, theirs)
                #expect(bad == 0, "k=\(m.k) rows=\(m.rows) n=\(n) gemm=\(gemm): \(bad) of \(y.count) differ")
                // The fixture tells the two orders apart wherever tinyBLAS's applies: the test
                // would see a kernel taking the wrong one.
                if gemm || m.k % 32 == 0 {
                    let other = Self.reference(m.weights, rows: m.rows, k: m.k, x: x, n: n, gemm: !gemm)
                    if Self.differing(other, theirs) > 0 { otherOrderDiffers += 1 }
                }
            }
        }
        #expect(otherOrderDiffers == 9, "the other order matched llama.cpp's bits in some cases")
    }

    @Test(.enabled(if: ck_bf16_pairs_enabled() == 1, "the CPU has no AVX512-BF16"))
    func productsGiveLlamaCppsBitsOnAVX512BF16() throws {
        let f = try Self.load()
        let pool = ComputePool(threads: 2)
        for m in f.matrices {
            for (n, theirs) in m.products {
                let x = f.rounded(k: m.k, n: n)
                for usePool in [false, true] {
                    let y = DotRowsKernelTests.product(
                        .bf16, m.weights, rows: m.rows, k: m.k, x: x, n: n, orders: nil, pool: usePool ? pool : nil)
                    let bad = Self.differing(y, theirs)
                    #expect(bad == 0, "k=\(m.k) rows=\(m.rows) n=\(n) pool=\(usePool): \(bad) of \(y.count) differ")
                }
            }
        }
    }

    /// Tiles at every edge (rows and tokens short of 4 and 6, token blocks), row slices over the
    /// pool, and order flags (CK_ORDER_BATCH: a micro-batch's rows take tinyBLAS's order; rows
    /// without it a row alone's, as decode steps, verified drafts and the experts' products do
    /// in llama.cpp), on random data against the emulation.
    @Test(.enabled(if: ck_bf16_pairs_enabled() == 1, "the CPU has no AVX512-BF16"))
    func tilesAndOrderFlagsFollowTheEmulation() {
        var rng = SeededRandom(seed: 9300)
        let pool = ComputePool(threads: 2)
        let batch = UInt8(CK_ORDER_BATCH)
        // (131,072: sweeps of 4 tokens, ck_rows_token_block, so 5 tokens and more cross one;
        // 8,192 × 40: the tiles' passes of 256 KiB of rows, 16 rows here, a short last one.)
        for (k, rows) in [(576, 40), (64, 7), (2048, 12), (96, 4), (100, 8), (131_072, 4), (8192, 40)] {
            let w = DotRowsKernelTests.weights(.bf16, count: rows * k, rng: &rng)
            let raw = rng.floats(13 * k, 2)
            var x = [Float](repeating: 0, count: raw.count)
            ck_round_row_bf16(raw, &x, Int32(raw.count))
            for n in [1, 2, 5, 6, 7, 13] {
                let xs = Array(x[0..<n * k])
                let patterns: [[UInt8]?] = [
                    nil, [UInt8](repeating: 0, count: n), [UInt8](repeating: batch, count: n),
                    (0..<n).map { [0, 3, 4].contains($0) ? 0 : batch | UInt8(CK_ORDER_TILED) },
                ]
                for orders in patterns {
                    let gemmShape = k % 32 == 0 && rows % 4 == 0
                    let vec = Self.reference(w, rows: rows, k: k, x: xs, n: n, gemm: false)
                    let gemm = Self.reference(w, rows: rows, k: k, x: xs, n: n, gemm: gemmShape)
                    let want = (0..<n * rows).map { i in
                        let flagged = orders.map { $0[i / rows] & batch != 0 } ?? (n > 1)
                        return flagged ? gemm[i] : vec[i]
                    }
                    for usePool in [false, true] {
                        let y = DotRowsKernelTests.product(
                            .bf16, w, rows: rows, k: k, x: xs, n: n, orders: orders, pool: usePool ? pool : nil)
                        let bad = zip(y, want).filter { $0.bitPattern != $1.bitPattern }.count
                        #expect(
                            bad == 0,
                            "k=\(k) rows=\(rows) n=\(n) orders=\(String(describing: orders)) pool=\(usePool): \(bad) differ"
                        )
                    }
                }
            }
        }
    }

    /// The AVX2 and portable paths (and CPUs without AVX512-BF16) multiply in f32 lanes of
    /// their own order, on the same rounded activations: within float noise of llama.cpp's
    /// AVX512-BF16 bits, where activations left unrounded would miss by far more.
    @Test func otherPathsComeWithinFloatNoise() throws {
        let f = try Self.load()
        defer {
            ck_set_fast_paths(1)
            ck_set_vnni(1)
        }
        for (fast, vnni) in [(Int32(1), Int32(0)), (0, 0)] {
            ck_set_fast_paths(fast)
            ck_set_vnni(vnni)
            #expect(ck_bf16_pairs_enabled() == 0)
            for m in f.matrices {
                for (n, theirs) in m.products {
                    let x = f.rounded(k: m.k, n: n)
                    let y = DotRowsKernelTests.product(
                        .bf16, m.weights, rows: m.rows, k: m.k, x: x, n: n, orders: nil, pool: nil)
                    var worst: Float = 0
                    for t in 0..<n {
                        for r in 0..<m.rows {
                            var magnitude: Float = 0
                            for i in 0..<m.k {
                                let wv = Float(bitPattern: UInt32(m.weights[r * m.k + i]) << 16)
                                magnitude += abs(wv * x[t * m.k + i])
                            }
                            let err = abs(y[t * m.rows + r] - Float(bitPattern: theirs[t * m.rows + r])) / magnitude
                            worst = max(worst, err)
                        }
                    }
                    #expect(worst < 1e-6, "fast=\(fast) k=\(m.k) n=\(n): error \(worst) of the magnitude")
                }
            }
        }
    }

    @Test func activationsRoundToNearestEvenBF16() {
        let cases: [(UInt32, UInt32)] = [
            (0x3f80_8000, 0x3f80_0000),  // halfway, even below
            (0x3f81_8000, 0x3f82_0000),  // halfway, even above
            (0x3f80_8001, 0x3f81_0000),
            (0x3f80_7fff, 0x3f80_0000),
            (0xbf81_8000, 0xbf82_0000),
            (0x7f7f_ffff, 0x7f80_0000),  // past the largest bf16: infinity
            (0x7f80_0000, 0x7f80_0000),
            (0x7f80_0001, 0x7fc0_0000),  // a signalling NaN comes back quiet
            (0x0000_8000, 0x0000_0000),
        ]
        let x = cases.map { Float(bitPattern: $0.0) }
        var y = [Float](repeating: 0, count: x.count)
        ck_round_row_bf16(x, &y, Int32(x.count))
        for (i, c) in cases.enumerated() {
            #expect(y[i].bitPattern == c.1, "\(String(c.0, radix: 16)) -> \(String(y[i].bitPattern, radix: 16))")
        }
    }
}
