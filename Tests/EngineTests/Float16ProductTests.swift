import CKernels
import Foundation
import Testing

@testable import Engine

/// F16 products, and BF16 ones where the CPU has no AVX512-BF16, against llama.cpp's own
/// (`Tests/Fixtures/reference/f16-products-{avx512,avx2}.json`, `bf16-products-{avx512,avx2}.json`,
/// made by `scripts/llama-cpp-float-products.cpp` with ggml's CPU backend at commit 0c1e57098
/// built for AVX-512 without AVX512-BF16 and for AVX2): weight matrices of 4 shapes (widths past
/// whole steps of 64, 32 and 16, a row count tinyBLAS refuses) times 1, 4 and 9 activation rows.
/// llama.cpp rounds the activations to the weights' type, then multiplies in f32 lanes of its
/// build's width: ggml_vec_dot_f16 / _bf16 for one row (and shapes tinyBLAS refuses), tinyBLAS
/// for several. The portable reference of those orders must give each file's bits on every CPU;
/// the kernels of each width must give them where they run (inferd's AVX-512 kernels on CPUs with
/// AVX-512 VNNI, the AVX2 ones on any x86 CPU with AVX2 through `ck_set_vnni(0)`).
@Suite(.serialized)
struct Float16ProductTests {
    struct File: CustomStringConvertible, Sendable {
        let name: String
        let type: GGMLType
        let lanes: Int
        var description: String { name }
    }

    static let files = [
        File(name: "f16-products-avx512.json", type: .f16, lanes: 16),
        File(name: "f16-products-avx2.json", type: .f16, lanes: 8),
        File(name: "bf16-products-avx512.json", type: .bf16, lanes: 16),
        File(name: "bf16-products-avx2.json", type: .bf16, lanes: 8),
    ]

    /// llama.cpp's choice: tinyBLAS for several rows of a width in whole steps of its lanes and a
    /// matrix of a multiple of 4 rows.
    static func gemm(k: Int, rows: Int, n: Int, lanes: Int) -> Bool { n > 1 && k % lanes == 0 && rows % 4 == 0 }

    /// The reference product, token-major.
    static func reference(
        _ type: GGMLType, _ w: [UInt16], rows: Int, k: Int, x: [Float], n: Int, lanes: Int, gemm: Bool
    ) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        w.withUnsafeBufferPointer { wb in
            x.withUnsafeBufferPointer { xb in
                for t in 0..<n {
                    for r in 0..<rows {
                        let wr = wb.baseAddress! + r * k, xt = xb.baseAddress! + t * k
                        y[t * rows + r] =
                            type == .f16
                            ? ck_dot_f16_reference(Int32(k), wr, xt, Int32(lanes), gemm ? 1 : 0)
                            : ck_dot_bf16_reference(Int32(k), wr, xt, Int32(lanes), gemm ? 1 : 0)
                    }
                }
            }
        }
        return y
    }

    /// Runs `body` with the fast kernels of `lanes` (BF16's AVX512-BF16 ones off); false where
    /// this CPU has none of that width.
    static func onKernels(lanes: Int, _ body: () throws -> Void) rethrows -> Bool {
        defer {
            ck_set_fast_paths(1)
            ck_set_vnni(1)
            ck_set_bf16_pairs(1)
        }
        ck_set_fast_paths(1)
        ck_set_vnni(lanes == 16 ? 1 : 0)
        ck_set_bf16_pairs(0)
        guard ck_float16_lanes() == lanes else { return false }
        try body()
        return true
    }

    static let wideKernels = onKernels(lanes: 16) {}
    static let narrowKernels = onKernels(lanes: 8) {}

    @Test(arguments: files)
    func theReferenceGivesLlamaCppsBitsOnEveryCPU(file: File) throws {
        let f = try BF16ProductTests.load(file.name, type: file.type)
        #expect(f.matrices.count == 4)
        for m in f.matrices {
            for (n, theirs) in m.products {
                let x = f.rounded(k: m.k, n: n)
                let gemm = Self.gemm(k: m.k, rows: m.rows, n: n, lanes: file.lanes)
                let y = Self.reference(
                    file.type, m.weights, rows: m.rows, k: m.k, x: x, n: n, lanes: file.lanes, gemm: gemm)
                let bad = BF16ProductTests.differing(y, theirs)
                #expect(bad == 0, "k=\(m.k) rows=\(m.rows) n=\(n) gemm=\(gemm): \(bad) of \(y.count) differ")
                // The file tells the orders apart wherever both apply, and the widths everywhere:
                // the test would see a kernel taking the wrong one.
                if gemm || m.k % file.lanes == 0 {
                    let other = Self.reference(
                        file.type, m.weights, rows: m.rows, k: m.k, x: x, n: n, lanes: file.lanes, gemm: !gemm)
                    #expect(BF16ProductTests.differing(other, theirs) > 0, "k=\(m.k) n=\(n): the other order matched")
                }
                let otherWidth = Self.reference(
                    file.type, m.weights, rows: m.rows, k: m.k, x: x, n: n, lanes: 24 - file.lanes, gemm: gemm)
                #expect(BF16ProductTests.differing(otherWidth, theirs) > 0, "k=\(m.k) n=\(n): the other width matched")
            }
        }
    }

    func kernelsGiveTheFilesBits(_ file: File) throws {
        let f = try BF16ProductTests.load(file.name, type: file.type)
        let pool = ComputePool(threads: 2)
        let ran = Self.onKernels(lanes: file.lanes) {
            for m in f.matrices {
                for (n, theirs) in m.products {
                    let x = f.rounded(k: m.k, n: n)
                    for usePool in [false, true] {
                        let y = DotRowsKernelTests.product(
                            file.type, m.weights, rows: m.rows, k: m.k, x: x, n: n, orders: nil,
                            pool: usePool ? pool : nil)
                        let bad = BF16ProductTests.differing(y, theirs)
                        #expect(bad == 0, "k=\(m.k) rows=\(m.rows) n=\(n) pool=\(usePool): \(bad) of \(y.count) differ")
                    }
                }
            }
        }
        #expect(ran)
    }

    @Test(.enabled(if: wideKernels, "no AVX-512 kernels on this CPU"), arguments: files.filter { $0.lanes == 16 })
    func avx512KernelsGiveLlamaCppsBits(file: File) throws { try kernelsGiveTheFilesBits(file) }

    @Test(.enabled(if: narrowKernels, "no AVX2 kernels on this CPU"), arguments: files.filter { $0.lanes == 8 })
    func avx2KernelsGiveLlamaCppsBits(file: File) throws { try kernelsGiveTheFilesBits(file) }

    /// Activations not yet rounded to the weights' type (a caller other than the pass) give the
    /// bits of the rounded ones on every path: the kernels round them (nearest even, halfway
    /// cases included) as they narrow them.
    @Test(arguments: [GGMLType.f16, .bf16])
    func unroundedActivationsAreRoundedFirst(type: GGMLType) {
        var rng = SeededRandom(seed: 9500 + UInt64(type.rawValue))
        let (k, rows, n) = (200, 8, 3)
        let w = DotRowsKernelTests.weights(type, count: rows * k, rng: &rng)
        var raw = rng.floats(n * k, 2)
        for i in stride(from: 0, to: raw.count, by: 5) {  // exact halfway cases of the rounding
            let bits = raw[i].bitPattern
            raw[i] = Float(bitPattern: type == .f16 ? (bits & ~0x1fff) | 0x1000 : (bits & ~0xffff) | 0x8000)
        }
        var x = [Float](repeating: 0, count: raw.count)
        #expect(ck_rows_quantize(nil, Int32(type.rawValue), raw, Int32(k), &x, 4 * k, Int32(n)) == 0)
        #expect(zip(raw, x).filter { $0 != $1 }.count > n * k / 2)
        var paths = 0
        defer { ck_set_bf16_pairs(1) }
        for pairs: Int32 in [1, 0] {
            ck_set_bf16_pairs(pairs)
            bothPaths { path in
                paths += 1
                for orders in [nil, [UInt8](repeating: 0, count: n)] {
                    let want = DotRowsKernelTests.product(
                        type, w, rows: rows, k: k, x: x, n: n, orders: orders, pool: nil)
                    let got = DotRowsKernelTests.product(
                        type, w, rows: rows, k: k, x: raw, n: n, orders: orders, pool: nil)
                    let bad = zip(got, want).filter { $0.bitPattern != $1.bitPattern }.count
                    #expect(
                        bad == 0, "\(type) \(path) pairs=\(pairs) orders=\(String(describing: orders)): \(bad) differ")
                }
            }
        }
        #expect(paths == 6)
    }

    /// Tiles at every edge (rows and tokens short of whole tiles, tails past whole steps), row
    /// slices over the pool, and order flags (CK_ORDER_BATCH: a micro-batch's rows take
    /// tinyBLAS's order; rows without it a row alone's, as decode steps, verified drafts and the
    /// experts' products do in llama.cpp), on random data against the reference, both widths.
    @Test(.enabled(if: narrowKernels, "no fast kernels on this CPU"), arguments: [GGMLType.f16, .bf16])
    func tilesAndOrderFlagsFollowTheReference(type: GGMLType) {
        var rng = SeededRandom(seed: 9400 + UInt64(type.rawValue))
        let pool = ComputePool(threads: 2)
        let batch = UInt8(CK_ORDER_BATCH)
        var widths = 0
        for lanes in [16, 8] {
            let ran = Self.onKernels(lanes: lanes) {
                // (The last: sweeps of 4 tokens, ck_rows_token_block, so 5 tokens and more cross one.)
                for (k, rows) in [(576, 40), (64, 7), (2048, 12), (96, 4), (100, 8), (520, 8), (40, 4), (131_072, 4)] {
                    let w = DotRowsKernelTests.weights(type, count: rows * k, rng: &rng)
                    let raw = rng.floats(13 * k, 2)
                    var x = [Float](repeating: 0, count: raw.count)
                    #expect(ck_rows_quantize(nil, Int32(type.rawValue), raw, Int32(k), &x, 4 * k, 13) == 0)
                    for n in [1, 2, 5, 6, 7, 13] {
                        let xs = Array(x[0..<n * k])
                        let patterns: [[UInt8]?] = [
                            nil, [UInt8](repeating: 0, count: n), [UInt8](repeating: batch, count: n),
                            (0..<n).map { [0, 3, 4].contains($0) ? 0 : batch | UInt8(CK_ORDER_TILED) },
                        ]
                        let vec = Self.reference(type, w, rows: rows, k: k, x: xs, n: n, lanes: lanes, gemm: false)
                        let gemm = Self.reference(
                            type, w, rows: rows, k: k, x: xs, n: n, lanes: lanes, gemm: rows % 4 == 0)
                        for orders in patterns {
                            let want = (0..<n * rows).map { i in
                                let flagged = orders.map { $0[i / rows] & batch != 0 } ?? (n > 1)
                                return flagged ? gemm[i] : vec[i]
                            }
                            for usePool in [false, true] {
                                let y = DotRowsKernelTests.product(
                                    type, w, rows: rows, k: k, x: xs, n: n, orders: orders, pool: usePool ? pool : nil)
                                let bad = zip(y, want).filter { $0.bitPattern != $1.bitPattern }.count
                                #expect(
                                    bad == 0,
                                    "\(type) lanes=\(lanes) k=\(k) rows=\(rows) n=\(n) orders=\(String(describing: orders)) pool=\(usePool): \(bad) differ"
                                )
                            }
                        }
                    }
                }
            }
            if ran { widths += 1 }
        }
        #expect(widths == (Self.wideKernels ? 2 : 1))
    }
}
