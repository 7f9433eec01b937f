import CKernels
import Testing

@testable import Engine

/// The multi-row tiled kernels of Q2_K, Q3_K and Q5_K (dot_kquants_tiled.c: one weight row
/// unpacked once for four activation rows) give every output the bits of the one-row kernels
/// (`ck_dot_ordered`, each row under its own order), for 1...17 activation rows, any mix of
/// row orders (tiled or not, in whole groups of four or not) and odd shapes.
@Suite(.serialized)
struct TiledKQuantKernelTests {
    @Test(arguments: [GGMLType.q5_K, .q3_K, .q2_K])
    func multiRowTiledKernelsMatchOneRowKernels(type: GGMLType) {
        var rng = SeededRandom(seed: 7000 + UInt64(type.rawValue))
        for (rows, k) in [(7, 768), (3, 256), (13, 1280)] {
            let w = RandomWeights.matrix(type, rows: rows, columns: k, scale: 0.2, rng: &rng)
            let wRowBytes = type.rowBytes(elements: k)!
            for n in 1...17 {
                let xRows = (0..<n).map { _ in WeightTypeKernelTests.activations(rng.floats(k, 2), for: type) }
                let x = xRows.flatMap { $0 }
                // All tiled, none, and a seeded mix of the four flag combinations.
                let mixed = (0..<n).map { _ in UInt8(rng.next() % 4) }
                for orders in [[UInt8](repeating: 2, count: n), [UInt8](repeating: 0, count: n), mixed] {
                    bothPaths { path in
                        let y = WeightTypeKernelTests.product(
                            type, w, rows: rows, k: k, x: x, xRowBytes: xRows[0].count, n: n, orders: orders)
                        for t in 0..<n {
                            for r in 0..<rows {
                                let expected = w.withUnsafeBytes { wb in
                                    xRows[t].withUnsafeBytes {
                                        path == "portable"
                                            ? ck_dot_ordered_portable(
                                                Int32(type.rawValue), Int32(k), wb.baseAddress! + r * wRowBytes,
                                                $0.baseAddress!, Int32(orders[t]))
                                            : ck_dot_ordered(
                                                Int32(type.rawValue), Int32(k), wb.baseAddress! + r * wRowBytes,
                                                $0.baseAddress!, Int32(orders[t]))
                                    }
                                }
                                #expect(
                                    y[t * rows + r].bitPattern == expected.bitPattern,
                                    "\(type) \(path) rows=\(rows) k=\(k) n=\(n) token \(t) row \(r) order \(orders[t])")
                            }
                        }
                    }
                }
            }
        }
    }
}
