import CKernels
import Foundation
import Testing

@testable import Engine

/// MXFP4 matrix products against llama.cpp's own (`Tests/Fixtures/reference/mxfp4-products.json`,
/// made by `scripts/llama-cpp-mxfp4-products.cpp` with ggml's CPU backend at commit 0c1e57098, no
/// repacked weights): 8 rows of K = 512 and 544 values (16 and 17 blocks: ggml's AVX2 kernel takes
/// blocks in pairs, an odd last one in its scalar tail) times 1, 4 and 9 activation rows,
/// quantized to Q8_0 as the model quantizes them. ggml's vec_dot_mxfp4_q8_0 is its product at
/// every row count; the AVX2 and AVX-512 VNNI kernels must give its bits, the portable one (ggml's
/// generic loop, another order) the same values within float rounding.
@Suite(.serialized)
struct MXFP4ProductTests {
    struct Case {
        let k: Int
        let n: Int
        let weights: [UInt8]
        let activations: [Float]
        let products: [UInt32]
    }

    static func load() throws -> (rows: Int, cases: [Case]) {
        let json = try TestFixtures.reference("mxfp4-products.json")
        let rows = try #require(json["rows"] as? Int)
        var cases: [Case] = []
        for c in try #require(json["cases"] as? [[String: Any]]) {
            let weights = ProductFixtures.bytes(hex: try #require(c["weights"] as? String))
            cases.append(
                Case(
                    k: try #require(c["k"] as? Int), n: try #require(c["n"] as? Int), weights: weights,
                    activations: try #require(c["activations"] as? [Double]).map { Float($0) },
                    products: try #require(c["products"] as? [String]).map { UInt32($0, radix: 16)! }))
        }
        return (rows, cases)
    }

    @Test func productsEqualLlamaCppsBits() throws {
        let (rows, cases) = try Self.load()
        #expect(cases.count == 6)
        for c in cases {
            #expect(c.weights.count == rows * GGMLType.mxfp4.rowBytes(elements: c.k)!)
            let (x, xRowBytes) = ProductFixtures.q8_0Rows(c.activations, k: c.k, n: c.n)
            try bothPaths { path in
                let y = WeightTypeKernelTests.product(
                    .mxfp4, c.weights, rows: rows, k: c.k, x: x, xRowBytes: xRowBytes, n: c.n, orders: [])
                _ = try #require(y.count == c.products.count)
                var differing = 0
                var first = ""
                for t in 0..<c.n {
                    for r in 0..<rows {
                        let theirs = Float(bitPattern: c.products[r + t * rows])
                        let mine = y[t * rows + r]
                        let same =
                            path == "portable"
                            ? close(mine, theirs, rel: 1e-5, abs: 1e-5) : mine.bitPattern == theirs.bitPattern
                        if !same {
                            differing += 1
                            if first.isEmpty { first = "token \(t) row \(r): \(mine) vs \(theirs)" }
                        }
                    }
                }
                #expect(
                    differing == 0, "\(path) k=\(c.k) n=\(c.n): \(differing) of \(c.n * rows) differ (first \(first))")
            }
        }
    }

    /// The scale byte as ggml reads it: 2^(e − 128), subnormal below 2, a power of two at 255.
    @Test func scaleBytesAreGGMLs() {
        #expect(ck_e8m0_to_fp32_half(0) == Float.leastNormalMagnitude / 4)
        #expect(ck_e8m0_to_fp32_half(1) == Float.leastNormalMagnitude / 2)
        #expect(ck_e8m0_to_fp32_half(2) == Float.leastNormalMagnitude)
        #expect(ck_e8m0_to_fp32_half(128) == 1)
        #expect(ck_e8m0_to_fp32_half(127) == 0.5)
        #expect(ck_e8m0_to_fp32_half(255) == 0x1p127)
    }
}
