import CKernels
import Foundation
import Testing

@testable import Engine

/// Q2_K matrix products against llama.cpp's own (`Tests/Fixtures/reference/q2_k-products.json`,
/// made by `scripts/llama-cpp-repacked-products.cpp Q2_K` with ggml's CPU backend at commit 0c1e57098 on
/// an AVX-512 CPU): 24 rows of K = 512 and 768 values times 1 and 9 activation rows, quantized to
/// Q8_K as the model quantizes them. On an AVX-512 CPU llama.cpp repacks every Q2_K matrix of a
/// multiple of 8 rows (its default): its GEMM takes a micro-batch's rows in whole groups of four
/// (exact sums per half super-block), its GEMV the rest (per super-block), each into two float
/// accumulators (the "repacked" bits). Elsewhere it runs its vec_dot, or its tiled product from 8
/// rows (the "plain" bits, `--no-repack`). inferd's interleaved Q2_K form must give the repacked
/// bits on its AVX-512 (VNNI) path and the plain ones on its AVX2 and portable paths (which stand
/// for CPUs without AVX-512); the portable reference of the repacked order must give them on
/// every CPU.
@Suite(.serialized)
struct Q2_KProductTests {
    /// The pass's order flags for a micro-batch of n rows.
    static func orders(_ n: Int) -> [UInt8] { (0..<n).map { LlamaModel.Segment.rowOrder($0, microBatch: n) } }

    @Test func theReferenceGivesTheRepackedBitsOnEveryCPU() throws {
        let cases = try ProductFixtures.loadRepacked("q2_k-products.json")
        #expect(cases.count == 4)
        for c in cases {
            let rowBytes = GGMLType.q2_K.rowBytes(elements: c.k)!
            #expect(c.weights.count == c.rows * rowBytes)
            let (x, xRowBytes) = ProductFixtures.q8_KRows(c.activations, k: c.k, n: c.n)
            var y = [Float](repeating: .nan, count: c.n * c.rows)
            let group4 = Self.orders(c.n).map { $0 & UInt8(CK_ORDER_GROUP4) != 0 }
            c.weights.withUnsafeBytes { wb in
                x.withUnsafeBytes { xb in
                    for t in 0..<c.n {
                        for r in 0..<c.rows {
                            y[t * c.rows + r] = ck_dot_q2_k_repacked_reference(
                                Int32(c.k), wb.baseAddress! + r * rowBytes, xb.baseAddress! + t * xRowBytes,
                                group4[t] ? 1 : 0)
                        }
                    }
                }
            }
            let (count, first) = ProductFixtures.differing(y, c.repacked, rows: c.rows, n: c.n)
            #expect(count == 0, "k=\(c.k) n=\(c.n): \(count) of \(y.count) differ (first \(first))")
            let plainDiffers = zip(c.repacked, c.plain).filter { $0 != $1 }.count
            #expect(plainDiffers > 0, "the two orders agree on k=\(c.k) n=\(c.n): the test could not tell them apart")
        }
    }

    /// The interleaved form on every path, with the pass's order flags and without (NULL: one
    /// micro-batch of n rows), with and without the pool.
    @Test func interleavedProductsFollowTheCPUsOrder() throws {
        let pool = ComputePool(threads: 2)
        for c in try ProductFixtures.loadRepacked("q2_k-products.json") {
            let (x, xRowBytes) = ProductFixtures.q8_KRows(c.activations, k: c.k, n: c.n)
            let (packed, packedType, groupBytes) = ProductFixtures.interleaved(.q2_K, c.weights, rows: c.rows, k: c.k)
            #expect(packedType == Int32(CK_TYPE_Q2_K_X8))
            bothPaths { path in
                let theirs = path == "fast" && InterleavedKernelTests.cpuHasVNNI ? c.repacked : c.plain
                for (flags, usePool) in [(Self.orders(c.n), false), (Self.orders(c.n), true), (nil, true)] {
                    // Without flags the rows take the one-token order there, which llama.cpp's
                    // plain run does not for nine rows (its tiled product): only the repacked
                    // order is the same without them.
                    if flags == nil && theirs == c.plain && c.n >= 8 { continue }
                    // The portable one-token order is ggml's generic vec_dot, which llama.cpp runs
                    // only without AVX2 (the fixture's plain run had it): its tiled one is checked.
                    if path == "portable" && c.n < 8 { continue }
                    var y = [Float](repeating: .nan, count: c.n * c.rows)
                    packed.withUnsafeBytes { w in
                        x.withUnsafeBytes { xb in
                            (flags ?? []).withUnsafeBufferPointer { ob in
                                y.withUnsafeMutableBufferPointer { yb in
                                    var args = ck_matmul_args(
                                        type: packedType, w: w.baseAddress!, w_row_bytes: groupBytes,
                                        rows: Int32(c.rows), k: Int32(c.k), x: xb.baseAddress!,
                                        x_row_bytes: xRowBytes, n: Int32(c.n), y: yb.baseAddress!,
                                        ldy: Int32(c.rows), orders: flags == nil ? nil : ob.baseAddress)
                                    ck_matmul(usePool ? pool.raw : nil, &args)
                                }
                            }
                        }
                    }
                    let (count, first) = ProductFixtures.differing(y, theirs, rows: c.rows, n: c.n)
                    #expect(
                        count == 0,
                        "\(path) flags=\(flags != nil) pool=\(usePool) k=\(c.k) n=\(c.n): \(count) of \(y.count) differ (first \(first))"
                    )
                }
            }
        }
    }
}
