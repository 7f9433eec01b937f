import CKernels
import Foundation
import Testing

@testable import Engine

/// Q4_0 matrix products against llama.cpp's own (`Tests/Fixtures/reference/q4_0-products.json`,
/// made by `scripts/llama-cpp-repacked-products.cpp Q4_0` with ggml's CPU backend at commit 0c1e57098): 24
/// rows of K = 512 and 544 values times 1, 4 and 9 activation rows, quantized to Q8_0 as the model
/// quantizes them. llama.cpp repacks every Q4_0 matrix of a multiple of 8 rows on an AVX2 machine
/// (its default, what llama-server runs); its repacked GEMV and GEMM give the "repacked" bits, and
/// every Q4_0 kernel here must give them: the file layout's per-row kernels and the interleaved
/// form's, on the VNNI, AVX2 and portable paths, with and without the pool. The fixture's
/// "plain" products (`--no-repack`: ggml's vec_dot row by row) differ from them in most outputs,
/// which is what lets this test tell the two orders apart.
@Suite(.serialized)
struct Q4_0ProductTests {
    @Test func theFixtureTellsTheTwoOrdersApart() throws {
        let cases = try ProductFixtures.loadRepacked("q4_0-products.json")
        #expect(cases.count == 6)
        let differing = cases.map { c in zip(c.repacked, c.plain).filter { $0 != $1 }.count }
        #expect(differing.allSatisfy { $0 > 0 }, "repacked and plain products differ in every case: \(differing)")
        for c in cases {
            for (a, b) in zip(c.repacked, c.plain) {
                #expect(close(Float(bitPattern: a), Float(bitPattern: b), rel: 1e-5, abs: 1e-5))
            }
        }
    }

    @Test func fileLayoutProductsEqualLlamaCppsRepackedBits() throws {
        for c in try ProductFixtures.loadRepacked("q4_0-products.json") {
            #expect(c.weights.count == c.rows * GGMLType.q4_0.rowBytes(elements: c.k)!)
            let (x, xRowBytes) = ProductFixtures.q8_0Rows(c.activations, k: c.k, n: c.n)
            try bothPaths { path in
                let y = WeightTypeKernelTests.product(
                    .q4_0, c.weights, rows: c.rows, k: c.k, x: x, xRowBytes: xRowBytes, n: c.n, orders: [])
                _ = try #require(y.count == c.repacked.count)
                let (count, first) = ProductFixtures.differing(y, c.repacked, rows: c.rows, n: c.n)
                #expect(count == 0, "\(path) k=\(c.k) n=\(c.n): \(count) of \(y.count) differ (first \(first))")
            }
        }
    }

    @Test func interleavedProductsEqualLlamaCppsRepackedBits() throws {
        let pool = ComputePool(threads: 2)
        for c in try ProductFixtures.loadRepacked("q4_0-products.json") {
            let (x, _) = ProductFixtures.q8_0Rows(c.activations, k: c.k, n: c.n)
            let (packed, packedType, groupBytes) = ProductFixtures.interleaved(.q4_0, c.weights, rows: c.rows, k: c.k)
            #expect(packedType == Int32(CK_TYPE_Q4_0_X8))
            bothPaths { path in
                for usePool in [false, true] {
                    let y = packed.withUnsafeBytes { w in
                        InterleavedKernelTests.product(
                            type: packedType, weights: w.baseAddress!, stride: groupBytes, rows: c.rows, k: c.k,
                            activations: x, n: c.n, pool: usePool ? pool : nil)
                    }
                    let (count, first) = ProductFixtures.differing(y, c.repacked, rows: c.rows, n: c.n)
                    #expect(
                        count == 0,
                        "\(path) pool=\(usePool) k=\(c.k) n=\(c.n): \(count) of \(y.count) differ (first \(first))")
                }
            }
        }
    }
}
