import CKernels
import Testing

@testable import Engine

/// F16 and BF16 products over several tokens, as a row alone's (dot_float16.c, dot_bf16_pairs.c:
/// each weight vector widened once per group of tokens) give every output the single-row
/// kernel's bits, for 1...9 tokens, odd widths and row counts (tile edges and the kernels'
/// tails), order flags without CK_ORDER_BATCH and none (row counts here are never a multiple of
/// 4, which tinyBLAS's order needs: Float16ProductTests covers that one), with and without the
/// pool, on every path.
@Suite(.serialized)
struct DotRowsKernelTests {
    static func weights(_ type: GGMLType, count: Int, rng: inout SeededRandom) -> [UInt16] {
        rng.floats(count, 0.3).map { v in
            type == .f16 ? Float16(v).bitPattern : UInt16(truncatingIfNeeded: v.bitPattern >> 16)
        }
    }

    @Test(arguments: [GGMLType.f16, .bf16])
    func multiRowProductsMatchSingleRowBits(type: GGMLType) {
        var rng = SeededRandom(seed: 7100 + UInt64(type.rawValue))
        let pool = ComputePool(threads: 2)
        for k in [7, 24, 40, 100, 576, 1000 + 13] {
            for rows in [1, 5, 19, 37] {
                let w = Self.weights(type, count: rows * k, rng: &rng)
                let n = 9
                // F16 products see activations rounded to f16 (the pass does it once); any floats
                // take the same arithmetic.
                let x = rng.floats(n * k, 2)
                for tokens in 1...n {
                    for flags in [nil, [UInt8](repeating: 0, count: tokens), (0..<tokens).map { UInt8($0 % 4) }] {
                        bothPaths { path in
                            var single = [Float](repeating: .nan, count: tokens * rows)
                            w.withUnsafeBytes { wb in
                                x.withUnsafeBytes { xb in
                                    for t in 0..<tokens {
                                        for r in 0..<rows {
                                            single[t * rows + r] = ck_dot(
                                                Int32(type.rawValue), Int32(k), wb.baseAddress! + r * 2 * k,
                                                xb.baseAddress! + t * 4 * k)
                                        }
                                    }
                                }
                            }
                            for usePool in [false, true] {
                                let got = Self.product(
                                    type, w, rows: rows, k: k, x: x, n: tokens, orders: flags,
                                    pool: usePool ? pool : nil)
                                let bad = (0..<tokens * rows).filter { got[$0].bitPattern != single[$0].bitPattern }
                                #expect(
                                    bad.isEmpty,
                                    "\(type) \(path) k=\(k) rows=\(rows) n=\(tokens) flags=\(String(describing: flags)) pool=\(usePool): \(bad.count) differ, first \(bad.first ?? -1)"
                                )
                            }
                        }
                    }
                }
            }
        }
    }

    static func product(
        _ type: GGMLType, _ w: [UInt16], rows: Int, k: Int, x: [Float], n: Int, orders: [UInt8]?, pool: ComputePool?
    ) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        let flags = orders ?? []
        w.withUnsafeBytes { wb in
            x.withUnsafeBytes { xb in
                flags.withUnsafeBufferPointer { ob in
                    y.withUnsafeMutableBufferPointer { yb in
                        var args = ck_matmul_args(
                            type: Int32(type.rawValue), w: wb.baseAddress!, w_row_bytes: 2 * k, rows: Int32(rows),
                            k: Int32(k), x: xb.baseAddress!, x_row_bytes: 4 * k, n: Int32(n), y: yb.baseAddress!,
                            ldy: Int32(rows), orders: orders == nil ? nil : ob.baseAddress)
                        ck_matmul(pool?.raw, &args)
                    }
                }
            }
        }
        return y
    }
}
