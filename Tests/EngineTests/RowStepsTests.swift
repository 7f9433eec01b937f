import CKernels
import Foundation
import Testing

@testable import Engine

/// The steps between products split over the pool by rows (rows.c): every row bit for bit what
/// the one-row function gives it on the calling thread, on every kernel path, for jobs small
/// enough to stay on the caller and large enough to be split (odd row counts, so chunks end
/// unevenly), with the path choice of the calling thread reaching the workers.
@Suite struct RowStepsTests {
    /// A pool per test: a pool takes one caller at a time, and tests run concurrently.
    let pool = ComputePool(threads: 2)
    /// (rows, width): small jobs stay on the caller, the others are split into chunks.
    static let shapes = [(1, 640), (3, 64), (37, 640), (301, 256), (129, 2048)]

    static func bits(_ x: [Float]) -> [UInt32] { x.map(\.bitPattern) }

    /// nil when a and b hold the same bits, else where and how they first differ (not the
    /// whole arrays: failures stay readable).
    static func firstDifference<T: Equatable>(_ a: [T], _ b: [T]) -> String? {
        guard a.count == b.count else { return "counts \(a.count) vs \(b.count)" }
        guard let i = a.indices.first(where: { a[$0] != b[$0] }) else { return nil }
        return "first difference at \(i): \(a[i]) vs \(b[i])"
    }

    @Test func rmsnormRowsMatchTheOneRowFunction() {
        var rng = SeededRandom(seed: 71)
        bothPaths { path in
            for (n, width) in Self.shapes {
                let x = rng.floats(n * width, 3)
                let w = rng.floats(width, 1.5)
                var expected = [Float](repeating: .nan, count: n * width)
                for r in 0..<n {
                    x.withUnsafeBufferPointer { xs in
                        expected.withUnsafeMutableBufferPointer { ys in
                            ck_rmsnorm(xs.baseAddress! + r * width, w, ys.baseAddress! + r * width, Int32(width), 1e-6)
                        }
                    }
                }
                var got = [Float](repeating: .nan, count: n * width)
                ck_rows_rmsnorm(pool.raw, x, w, &got, Int32(n), Int32(width), 1e-6)
                if let d = Self.firstDifference(Self.bits(got), Self.bits(expected)) {
                    Issue.record("\(path) n=\(n) width=\(width): \(d)"); return
                }
                // In place, as the pass normalizes per-head queries.
                var inPlace = x
                inPlace.withUnsafeMutableBufferPointer {
                    ck_rows_rmsnorm(pool.raw, $0.baseAddress!, w, $0.baseAddress!, Int32(n), Int32(width), 1e-6)
                }
                if let d = Self.firstDifference(Self.bits(inPlace), Self.bits(expected)) {
                    Issue.record("\(path) in place n=\(n) width=\(width): \(d)"); return
                }
            }
        }
    }

    @Test(arguments: [GGMLType.q8_0, .q8_1, .q8_K])
    func quantizedRowsMatchTheOneRowFunction(form: GGMLType) throws {
        var rng = SeededRandom(seed: 72 + UInt64(form.rawValue))
        try bothPaths { path in
            for (n, width) in Self.shapes where width % 256 == 0 || form != .q8_K {
                let x = rng.floats(n * width, 4)
                let rowBytes = form.rowBytes(elements: width)!
                var expected = [UInt8](repeating: 0xAA, count: n * rowBytes)
                x.withUnsafeBufferPointer { xs in
                    expected.withUnsafeMutableBytes { out in
                        for r in 0..<n {
                            form.quantizeActivations(
                                xs.baseAddress! + r * width, into: out.baseAddress! + r * rowBytes, count: width)
                        }
                    }
                }
                var got = [UInt8](repeating: 0x55, count: n * rowBytes)
                let status = got.withUnsafeMutableBytes {
                    ck_rows_quantize(
                        pool.raw, Int32(form.rawValue), x, Int32(width), $0.baseAddress!, rowBytes, Int32(n))
                }
                try #require(status == 0)
                if let d = Self.firstDifference(got, expected) {
                    Issue.record("\(form) \(path) n=\(n) width=\(width): \(d)"); return
                }
            }
        }
        var untouched = [UInt8](repeating: 7, count: 64)
        let refused = untouched.withUnsafeMutableBytes {
            ck_rows_quantize(
                pool.raw, Int32(GGMLType.q4_0.rawValue), [Float](repeating: 1, count: 32), 32, $0.baseAddress!, 64,
                1)
        }
        #expect(refused == -1)
        #expect(untouched.allSatisfy { $0 == 7 }, "a refused type writes nothing")
    }

    @Test(arguments: [0, 1])
    func gatedActivationRowsMatchTheWholeBufferFunction(gelu: Int32) {
        var rng = SeededRandom(seed: 73 + UInt64(gelu))
        bothPaths { path in
            for (n, width) in Self.shapes {
                let gate = rng.floats(n * width, 12)
                let up = rng.floats(n * width, 2)
                var expected = [Float](repeating: .nan, count: n * width)
                if gelu == 1 {
                    ck_gelu_mul(gate, up, &expected, Int32(n * width))
                } else {
                    ck_silu_mul(gate, up, &expected, Int32(n * width))
                }
                var got = [Float](repeating: .nan, count: n * width)
                ck_rows_glu(pool.raw, gelu, gate, up, &got, Int32(n), Int32(width))
                if let d = Self.firstDifference(Self.bits(got), Self.bits(expected)) {
                    Issue.record("gelu=\(gelu) \(path) n=\(n) width=\(width): \(d)"); return
                }
            }
        }
    }

    @Test func residualAddRowsMatchTheWholeBufferFunction() throws {
        var rng = SeededRandom(seed: 74)
        for (n, width) in Self.shapes {
            let x = rng.floats(n * width, 5)
            let start = rng.floats(n * width, 5)
            var expected = start
            ck_add(&expected, x, Int32(n * width))
            var got = start
            ck_rows_add(pool.raw, &got, x, Int32(n), Int32(width))
            if let d = Self.firstDifference(Self.bits(got), Self.bits(expected)) {
                Issue.record("n=\(n) width=\(width): \(d)"); return
            }
        }
    }

    /// Queries and keys rotated at their positions, keys and values written as f16 at those
    /// positions of the caches and nowhere else, for both pairings and with frequency factors.
    @Test(arguments: [(Int32(0), false), (1, false), (0, true)])
    func ropeAndCacheRowsMatchTheOneRowFunctions(halves: Int32, factors: Bool) throws {
        var rng = SeededRandom(seed: 75 + UInt64(halves))
        let (heads, kvHeads, headDim, nRot) = (9, 3, 64, 64)
        let qStride = heads * headDim + 8  // wider than the heads: the stride is honoured
        let kvDim = kvHeads * headDim
        let freq = factors ? (0..<nRot / 2).map { _ in 1 + abs(rng.float(3)) } : nil
        bothPaths { path in
            for (n, pos0) in [(1, 0), (5, 17), (200, 3), (77, 1000)] {
                let capacity = pos0 + n + 2
                var q = rng.floats(n * qStride, 2)
                var k = rng.floats(n * kvDim, 2)
                let v = rng.floats(n * kvDim, 2)
                var expectedQ = q
                var expectedK = k
                var expectedKeys = [UInt16](repeating: 0xBEEF, count: capacity * kvDim)
                var expectedValues = expectedKeys
                for t in 0..<n {
                    expectedQ.withUnsafeMutableBufferPointer { qs in
                        expectedK.withUnsafeMutableBufferPointer { ks in
                            ck_rope_ext(
                                qs.baseAddress! + t * qStride, Int32(heads), Int32(headDim), Int32(nRot),
                                Int32(pos0 + t), 10000, 0.5, freq, halves)
                            ck_rope_ext(
                                ks.baseAddress! + t * kvDim, Int32(kvHeads), Int32(headDim), Int32(nRot),
                                Int32(pos0 + t), 10000, 0.5, freq, halves)
                            expectedKeys.withUnsafeMutableBufferPointer {
                                ck_fp32_to_fp16_row(
                                    ks.baseAddress! + t * kvDim, $0.baseAddress! + (pos0 + t) * kvDim, kvDim)
                            }
                        }
                    }
                    v.withUnsafeBufferPointer { vs in
                        expectedValues.withUnsafeMutableBufferPointer {
                            ck_fp32_to_fp16_row(
                                vs.baseAddress! + t * kvDim, $0.baseAddress! + (pos0 + t) * kvDim, kvDim)
                        }
                    }
                }
                var keys = [UInt16](repeating: 0xBEEF, count: capacity * kvDim)
                var values = keys
                q.withUnsafeMutableBufferPointer { qs in
                    k.withUnsafeMutableBufferPointer { ks in
                        keys.withUnsafeMutableBufferPointer { kc in
                            values.withUnsafeMutableBufferPointer { vc in
                                v.withUnsafeBufferPointer { vs in
                                    freq.withUnsafeBufferPointerOrNil { f in
                                        var args = ck_rope_kv_args(
                                            q: qs.baseAddress!, q_stride: Int32(qStride), n_head: Int32(heads),
                                            k: ks.baseAddress!, v: vs.baseAddress!, kv_stride: Int32(kvDim),
                                            n_kv_head: Int32(kvHeads),
                                            head_dim: Int32(headDim), n_rot: Int32(nRot), pos0: Int32(pos0),
                                            n_tokens: Int32(n), base: 10000, freq_scale: 0.5, freq_factors: f,
                                            halves: halves, k_cache: kc.baseAddress!, v_cache: vc.baseAddress!,
                                            yarn: nil, q_scale: nil)
                                        ck_rows_rope_kv(pool.raw, &args)
                                    }
                                }
                            }
                        }
                    }
                }
                let what = "\(path) halves=\(halves) factors=\(factors) n=\(n) pos0=\(pos0)"
                if let d = Self.firstDifference(Self.bits(q), Self.bits(expectedQ)) {
                    Issue.record("queries: \(what): \(d)"); return
                }
                if let d = Self.firstDifference(Self.bits(k), Self.bits(expectedK)) {
                    Issue.record("keys: \(what): \(d)"); return
                }
                if let d = Self.firstDifference(keys, expectedKeys) { Issue.record("key cache: \(what): \(d)"); return }
                if let d = Self.firstDifference(values, expectedValues) {
                    Issue.record("value cache: \(what): \(d)"); return
                }
            }
        }
    }

    /// The vector GELU (F16C conversion, gathered table entries) against the portable loop on
    /// every f16 value, the clamps' edges and a tail that is not a multiple of eight.
    @Test func vectorGeluMatchesThePortableLoopOnEveryHalf() throws {
        var gate: [Float] = (0..<65536).map { Float(Float16(bitPattern: UInt16($0))) }.filter { !$0.isNaN }
        gate += [
            -10, -10.000001, -9.999999, 10, 9.999999, 10.000001, 65520, -65520, 1e-30, -1e-30, .infinity, -.infinity,
        ]
        var rng = SeededRandom(seed: 76)
        gate += rng.floats(1001, 11)
        let up = rng.floats(gate.count, 3)
        var fast = [Float](repeating: .nan, count: gate.count)
        var portable = fast
        ck_gelu_mul(gate, up, &fast, Int32(gate.count))
        ck_set_fast_paths(0)
        defer { ck_set_fast_paths(1) }
        ck_gelu_mul(gate, up, &portable, Int32(gate.count))
        for i in gate.indices where fast[i].bitPattern != portable[i].bitPattern {
            // inf * 0-like products give NaN on both paths; their payloads may differ.
            if fast[i].isNaN && portable[i].isNaN { continue }
            Issue.record("gelu(\(gate[i])) * \(up[i]): fast \(fast[i]) vs portable \(portable[i])")
            return
        }
    }
}

extension Optional where Wrapped == [Float] {
    /// The array's base address for the call's duration, or nil.
    func withUnsafeBufferPointerOrNil<R>(_ body: (UnsafePointer<Float>?) throws -> R) rethrows -> R {
        guard let self else { return try body(nil) }
        return try self.withUnsafeBufferPointer { try body($0.baseAddress) }
    }
}
