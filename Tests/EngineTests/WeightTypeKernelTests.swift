import CKernels
import Testing

@testable import Engine

/// The dot products and matrix products of every weight type against the Swift reference
/// (dequantize both sides, sum in Double), on every path (VNNI, AVX2, portable), one row at a
/// time and through ck_matmul / ck_matmul_many with and without the pool.
@Suite(.serialized)
struct WeightTypeKernelTests {
    static let types: [GGMLType] = [
        .f32, .f16, .bf16, .q8_0, .q4_0, .q4_1, .q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .mxfp4,
    ]

    /// Activations in `type`'s form (quantized with the C quantizers, which other tests check; F16
    /// and BF16: rounded to that type, as a pass gives them, still f32).
    static func activations(_ x: [Float], for type: GGMLType) -> [UInt8] {
        let form = type.activationForm!
        if form == .f32 {
            var y = x
            if type.roundsActivations {
                let status = ck_rows_quantize(nil, Int32(type.rawValue), x, Int32(x.count), &y, 4 * x.count, 1)
                precondition(status == 0)
            }
            return y.flatMap { v in withUnsafeBytes(of: v.bitPattern.littleEndian, Array.init) }
        }
        var out = [UInt8](repeating: 0, count: form.rowBytes(elements: x.count)!)
        x.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBytes {
                form.quantizeActivations(src.baseAddress!, into: $0.baseAddress!, count: x.count)
            }
        }
        return out
    }

    /// Σ |w|·|a| of a row: the scale the rounding error of a dot product is measured against.
    static func magnitude(_ w: [UInt8], _ a: [UInt8], type: GGMLType, k: Int) -> Float {
        let wv = ReferenceKernels.dequantize(w, type: type, count: k)!
        let av = ReferenceKernels.dequantize(a, type: type.activationForm!, count: k)!
        return Float((0..<k).reduce(0.0) { $0 + Double(abs(wv[$1])) * Double(abs(av[$1])) })
    }

    @Test(arguments: types)
    func dotMatchesReference(type: GGMLType) {
        var rng = SeededRandom(seed: 1000 + UInt64(type.rawValue))
        for k in [256, 512, 2048] {
            let w = RandomWeights.row(type, columns: k, scale: 0.2, rng: &rng)
            let a = Self.activations(rng.floats(k, 2), for: type)
            let expected = ReferenceKernels.dot(weights: w, type: type, activations: a, k: k)
            let tolerance = 2e-6 * Self.magnitude(w, a, type: type, k: k) + 1e-6
            let portable = w.withUnsafeBytes { wb in
                a.withUnsafeBytes { ck_dot_portable(Int32(type.rawValue), Int32(k), wb.baseAddress!, $0.baseAddress!) }
            }
            #expect(abs(portable - expected) <= tolerance, "\(type) portable k=\(k): \(portable) vs \(expected)")
            bothPaths { path in
                let got = w.withUnsafeBytes { wb in
                    a.withUnsafeBytes { ck_dot(Int32(type.rawValue), Int32(k), wb.baseAddress!, $0.baseAddress!) }
                }
                #expect(abs(got - expected) <= tolerance, "\(type) \(path) k=\(k): \(got) vs \(expected)")
            }
        }
    }

    /// Odd row counts, n = 1, 2, 3, 5 tokens, ck_matmul with and without the pool and
    /// ck_matmul_many with a second matrix of the same type.
    @Test(arguments: types)
    func matmulMatchesReference(type: GGMLType) {
        var rng = SeededRandom(seed: 2000 + UInt64(type.rawValue))
        let k = 512
        let rows = [37, 19]
        let weights = rows.map { RandomWeights.matrix(type, rows: $0, columns: k, scale: 0.2, rng: &rng) }
        let wRowBytes = type.rowBytes(elements: k)!
        let pool = ComputePool(threads: 2)
        for n in [1, 2, 3, 5] {
            let xRows = (0..<n).map { _ in Self.activations(rng.floats(k, 2), for: type) }
            let xRowBytes = xRows[0].count
            let x = xRows.flatMap { $0 }
            var expected: [[Float]] = []
            var tolerance: [[Float]] = []
            for (m, w) in weights.enumerated() {
                var e = [Float](repeating: 0, count: n * rows[m])
                var tol = e
                for t in 0..<n {
                    for r in 0..<rows[m] {
                        let wr = Array(w[r * wRowBytes..<(r + 1) * wRowBytes])
                        e[t * rows[m] + r] = ReferenceKernels.dot(weights: wr, type: type, activations: xRows[t], k: k)
                        tol[t * rows[m] + r] = 2e-6 * Self.magnitude(wr, xRows[t], type: type, k: k) + 1e-6
                    }
                }
                expected.append(e)
                tolerance.append(tol)
            }
            bothPaths { path in
                for mode in ["single", "pool", "many"] {
                    var first = [Float](repeating: .nan, count: n * rows[0])
                    var second = [Float](repeating: .nan, count: n * rows[1])
                    weights[0].withUnsafeBytes { w0 in
                        weights[1].withUnsafeBytes { w1 in
                            x.withUnsafeBytes { xb in
                                first.withUnsafeMutableBufferPointer { y0 in
                                    second.withUnsafeMutableBufferPointer { y1 in
                                        let ws = [w0.baseAddress!, w1.baseAddress!]
                                        let ys = [y0.baseAddress!, y1.baseAddress!]
                                        var args = (0..<2).map { m in
                                            ck_matmul_args(
                                                type: Int32(type.rawValue), w: ws[m], w_row_bytes: wRowBytes,
                                                rows: Int32(rows[m]), k: Int32(k), x: xb.baseAddress!,
                                                x_row_bytes: xRowBytes, n: Int32(n), y: ys[m], ldy: Int32(rows[m]),
                                                orders: nil)
                                        }
                                        switch mode {
                                        case "single":
                                            ck_matmul(nil, &args[0])
                                            ck_matmul(nil, &args[1])
                                        case "pool":
                                            ck_matmul(pool.raw, &args[0])
                                            ck_matmul(pool.raw, &args[1])
                                        default: ck_matmul_many(pool.raw, &args, 2)
                                        }
                                    }
                                }
                            }
                        }
                    }
                    let y = [first, second]
                    for m in 0..<2 {
                        let bad = (0..<n * rows[m]).filter { !(abs(y[m][$0] - expected[m][$0]) <= tolerance[m][$0]) }
                        #expect(
                            bad.isEmpty,
                            "\(type) \(path) \(mode) n=\(n) matrix \(m): \(bad.count) outputs off, first \(bad.first ?? -1)"
                        )
                    }
                }
            }
        }
    }

    /// The fast kernels sum in another order than the portable ones, but over the same integers:
    /// on the hot types they must agree to float rounding (tighter than the reference check).
    @Test(arguments: [GGMLType.q4_K, .q6_K, .q5_0, .q8_0, .q5_K, .q4_0, .q5_1, .q2_K, .q3_K])
    func fastMatchesPortable(type: GGMLType) {
        var rng = SeededRandom(seed: 3000 + UInt64(type.rawValue))
        for k in [256, 1024, 2048] {
            let w = RandomWeights.row(type, columns: k, scale: 0.2, rng: &rng)
            let a = Self.activations(rng.floats(k, 2), for: type)
            let tolerance = 1e-6 * Self.magnitude(w, a, type: type, k: k)
            let portable = w.withUnsafeBytes { wb in
                a.withUnsafeBytes { ck_dot_portable(Int32(type.rawValue), Int32(k), wb.baseAddress!, $0.baseAddress!) }
            }
            let fast = w.withUnsafeBytes { wb in
                a.withUnsafeBytes { ck_dot(Int32(type.rawValue), Int32(k), wb.baseAddress!, $0.baseAddress!) }
            }
            #expect(abs(fast - portable) <= tolerance, "\(type) k=\(k): fast \(fast) vs portable \(portable)")
        }
    }

    /// Batches of four tokens go through kernels that unpack a weight row once for four
    /// activation rows: every output must be bit for bit the single-row dot product's, in the
    /// order a row in a whole group of four gets (Q4_K's four-row order, as llama.cpp's GEMM).
    @Test(arguments: [GGMLType.q5_0, .q4_K, .q6_K, .q5_K, .q4_0, .q5_1, .q2_K, .q3_K, .bf16])
    func batchedProductsEqualSingleDots(type: GGMLType) {
        var rng = SeededRandom(seed: 4000 + UInt64(type.rawValue))
        let k = 1024
        let rows = 13
        let w = RandomWeights.matrix(type, rows: rows, columns: k, scale: 0.2, rng: &rng)
        let wRowBytes = type.rowBytes(elements: k)!
        for n in [1, 2, 4, 7, 9] {
            let xRows = (0..<n).map { _ in Self.activations(rng.floats(k, 2), for: type) }
            let x = xRows.flatMap { $0 }
            bothPaths { path in
                let y = Self.product(type, w, rows: rows, k: k, x: x, xRowBytes: xRows[0].count, n: n, orders: [])
                for t in 0..<n {
                    for r in 0..<rows {
                        let order = t < n - n % 4 ? CK_ORDER_GROUP4 : 0
                        let single = w.withUnsafeBytes { wb in
                            xRows[t].withUnsafeBytes {
                                ck_dot_ordered(
                                    Int32(type.rawValue), Int32(k), wb.baseAddress! + r * wRowBytes, $0.baseAddress!,
                                    Int32(order))
                            }
                        }
                        #expect(
                            y[t * rows + r].bitPattern == single.bitPattern,
                            "\(type) \(path) n=\(n) token \(t) row \(r): \(y[t * rows + r]) vs \(single)")
                    }
                }
            }
        }
    }

    /// Rows given orders (llama.cpp's micro-batch arithmetics, `ck_matmul_args.orders`) get
    /// exactly `ck_dot_ordered`'s result, whatever the other rows' orders; on every path the fast
    /// kernels give the portable ones' bits. The two orders differ from the single-row one.
    @Test(arguments: [GGMLType.q4_K, .q6_K, .q2_K, .q3_K, .q5_K])
    func orderedProductsFollowEachRowsOrder(type: GGMLType) {
        var rng = SeededRandom(seed: 5000 + UInt64(type.rawValue))
        let k = 1024
        let rows = 11
        let w = RandomWeights.matrix(type, rows: rows, columns: k, scale: 0.2, rng: &rng)
        let wRowBytes = type.rowBytes(elements: k)!
        let n = 10
        let xRows = (0..<n).map { _ in Self.activations(rng.floats(k, 2), for: type) }
        let x = xRows.flatMap { $0 }
        let orders: [UInt8] = [1, 1, 3, 1, 0, 2, 3, 3, 1, 1]
        func ordered(_ r: Int, _ t: Int, _ order: Int32, portable: Bool) -> Float {
            w.withUnsafeBytes { wb in
                xRows[t].withUnsafeBytes {
                    portable
                        ? ck_dot_ordered_portable(
                            Int32(type.rawValue), Int32(k), wb.baseAddress! + r * wRowBytes, $0.baseAddress!, order)
                        : ck_dot_ordered(
                            Int32(type.rawValue), Int32(k), wb.baseAddress! + r * wRowBytes, $0.baseAddress!, order)
                }
            }
        }
        var differs = 0
        for r in 0..<rows {
            for t in 0..<n {
                let special = type == .q4_K ? CK_ORDER_GROUP4 : CK_ORDER_TILED
                #expect(
                    ordered(r, t, special, portable: false).bitPattern
                        == ordered(r, t, special, portable: true).bitPattern)
                if ordered(r, t, special, portable: true) != ordered(r, t, 0, portable: true) { differs += 1 }
            }
        }
        #expect(differs > 0, "\(type): the batched order never differs from the single-row one")
        bothPaths { path in
            let y = Self.product(type, w, rows: rows, k: k, x: x, xRowBytes: xRows[0].count, n: n, orders: orders)
            for t in 0..<n {
                for r in 0..<rows {
                    let expected = ordered(r, t, Int32(orders[t]), portable: path == "portable")
                    #expect(y[t * rows + r].bitPattern == expected.bitPattern, "\(type) \(path) token \(t) row \(r)")
                }
            }
        }
    }

    /// ck_matmul (no pool) of `rows` weight rows of `type` against `n` activation rows, with
    /// per-row `orders` (none: the default).
    static func product(
        _ type: GGMLType, _ w: [UInt8], rows: Int, k: Int, x: [UInt8], xRowBytes: Int, n: Int, orders: [UInt8]
    ) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        w.withUnsafeBytes { wb in
            x.withUnsafeBytes { xb in
                orders.withUnsafeBufferPointer { ob in
                    y.withUnsafeMutableBufferPointer { yb in
                        var args = ck_matmul_args(
                            type: Int32(type.rawValue), w: wb.baseAddress!, w_row_bytes: type.rowBytes(elements: k)!,
                            rows: Int32(rows), k: Int32(k), x: xb.baseAddress!, x_row_bytes: xRowBytes, n: Int32(n),
                            y: yb.baseAddress!, ldy: Int32(rows), orders: ob.isEmpty ? nil : ob.baseAddress)
                        ck_matmul(nil, &args)
                    }
                }
            }
        }
        return y
    }
}
