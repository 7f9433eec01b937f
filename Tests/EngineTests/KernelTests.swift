import CKernels
import Foundation
import Testing

@testable import Engine

/// A small deterministic generator so failures reproduce.
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in [-scale, scale).
    mutating func float(_ scale: Float = 1) -> Float {
        Float(next() >> 40) / Float(1 << 24) * 2 * scale - scale
    }
    mutating func floats(_ n: Int, _ scale: Float = 1) -> [Float] { (0..<n).map { _ in float(scale) } }
}

/// Runs `body` with the fast paths (with and without AVX-512 VNNI), then with the portable
/// paths, restoring the default.
func bothPaths(_ body: (String) throws -> Void) rethrows {
    defer {
        ck_set_fast_paths(1)
        ck_set_vnni(1)
    }
    for (fast, vnni) in [(Int32(1), Int32(1)), (1, 0), (0, 0)] {
        ck_set_fast_paths(fast)
        ck_set_vnni(vnni)
        try body(fast == 1 ? (vnni == 1 ? "fast" : "fast-avx2") : "portable")
    }
}

func close(_ a: Float, _ b: Float, rel: Float, abs: Float = 1e-6) -> Bool {
    Swift.abs(a - b) <= abs + rel * max(Swift.abs(a), Swift.abs(b))
}

@Suite(.serialized)
struct KernelTests {
    @Test func fp16ConversionMatchesSwiftFloat16() {
        var rng = SeededRandom(seed: 1)
        var values: [Float] = rng.floats(997, 70000) + rng.floats(500, 1e-4) + rng.floats(300, 1e-6)
        values += [0, -0, 65504, 65519.99, 65520, -65520, 1e-8, 6e-8, .infinity, -.infinity]
        bothPaths { path in
            var halves = [UInt16](repeating: 0, count: values.count)
            var back = [Float](repeating: 0, count: values.count)
            ck_fp32_to_fp16_row(values, &halves, values.count)
            ck_fp16_to_fp32_row(halves, &back, values.count)
            for (i, v) in values.enumerated() {
                #expect(halves[i] == ReferenceKernels.floatToFP16(v), "\(path) fp32->fp16 of \(v)")
                #expect(back[i] == ReferenceKernels.fp16ToFloat(halves[i]), "\(path) fp16->fp32 of \(halves[i])")
                #expect(ck_fp32_to_fp16(v) == ReferenceKernels.floatToFP16(v), "scalar fp32->fp16 of \(v)")
            }
        }
    }

    @Test(arguments: [32, 64, 576, 1536])
    func activationQuantizationMatchesReference(k: Int) {
        var rng = SeededRandom(seed: UInt64(k))
        var x = rng.floats(k, 3)
        x[5] = 0
        if k >= 64 { for j in 32..<64 { x[j] = 0 } }  // an all-zero block
        bothPaths { path in
            let q81 = UnsafeMutableRawBufferPointer.allocate(byteCount: k / 32 * 36, alignment: 4)
            let q80 = UnsafeMutableRawBufferPointer.allocate(byteCount: k / 32 * 34, alignment: 4)
            defer {
                q81.deallocate()
                q80.deallocate()
            }
            ck_quantize_row_q8_1(x, q81.baseAddress!.assumingMemoryBound(to: ck_block_q8_1.self), Int32(k))
            ck_quantize_row_q8_0(x, q80.baseAddress!.assumingMemoryBound(to: ck_block_q8_0.self), Int32(k))
            #expect(Array(q81) == ReferenceKernels.quantizeQ8_1(x), "\(path) Q8_1, k=\(k)")
            #expect(Array(q80) == ReferenceKernels.quantizeQ8_0(x), "\(path) Q8_0, k=\(k)")
        }
    }

    @Test(arguments: [32, 96, 576, 1536])
    func quantizedDotsMatchReference(k: Int) {
        var rng = SeededRandom(seed: 100 + UInt64(k))
        let w41 = ReferenceKernels.quantizeQ4_1(rng.floats(k, 0.5))
        let w80 = ReferenceKernels.quantizeQ8_0(rng.floats(k, 0.5))
        let a = rng.floats(k, 2)
        let a81 = ReferenceKernels.quantizeQ8_1(a)
        let a80 = ReferenceKernels.quantizeQ8_0(a)
        let expect41 = ReferenceKernels.dotQ4_1Q8_1(w41, a81, k: k)
        let expect80 = ReferenceKernels.dotQ8_0Q8_0(w80, a80, k: k)
        bothPaths { path in
            let got41 = w41.withUnsafeBytes { w in
                a81.withUnsafeBytes { x in
                    ck_dot_q4_1_q8_1(
                        Int32(k), w.baseAddress!.assumingMemoryBound(to: ck_block_q4_1.self),
                        x.baseAddress!.assumingMemoryBound(to: ck_block_q8_1.self))
                }
            }
            let got80 = w80.withUnsafeBytes { w in
                a80.withUnsafeBytes { x in
                    ck_dot_q8_0_q8_0(
                        Int32(k), w.baseAddress!.assumingMemoryBound(to: ck_block_q8_0.self),
                        x.baseAddress!.assumingMemoryBound(to: ck_block_q8_0.self))
                }
            }
            #expect(close(got41, expect41, rel: 1e-5, abs: 1e-4), "\(path) Q4_1 dot \(got41) vs \(expect41)")
            #expect(close(got80, expect80, rel: 1e-5, abs: 1e-4), "\(path) Q8_0 dot \(got80) vs \(expect80)")
        }
    }

    @Test(arguments: [1, 7, 8, 15, 33, 64, 100])
    func floatDotsMatchReference(k: Int) {
        var rng = SeededRandom(seed: 7 + UInt64(k))
        let w = rng.floats(k)
        let a = rng.floats(k)
        let wh = w.map(ReferenceKernels.floatToFP16)
        let expect32 = ReferenceKernels.dot(w, a)
        // F16 products round the activations to f16 first (as llama.cpp's; the pass has done it
        // already, the kernels do it for anyone else).
        let ah = a.map { ReferenceKernels.fp16ToFloat(ReferenceKernels.floatToFP16($0)) }
        let expect16 = ReferenceKernels.dot(wh.map(ReferenceKernels.fp16ToFloat), ah)
        bothPaths { path in
            #expect(close(ck_dot_f32(Int32(k), w, a), expect32, rel: 1e-5, abs: 1e-5), "\(path) f32 k=\(k)")
            #expect(close(ck_dot_f16_f32(Int32(k), wh, a), expect16, rel: 1e-5, abs: 1e-5), "\(path) f16 k=\(k)")
        }
    }

    /// Batched matrix product for every weight type, odd token counts and odd row counts,
    /// through the pool and without it.
    @Test(arguments: [GGMLType.q4_1, .q8_0, .f32, .f16])
    func matmulMatchesPerRowReference(type: GGMLType) {
        let k = 96
        let rows = 37
        var rng = SeededRandom(seed: UInt64(type.rawValue) + 55)
        let weights = rng.floats(rows * k, 0.3)
        var wBytes: [UInt8] = []
        for r in 0..<rows {
            let row = Array(weights[r * k..<(r + 1) * k])
            switch type {
            case .q4_1: wBytes += ReferenceKernels.quantizeQ4_1(row)
            case .q8_0: wBytes += ReferenceKernels.quantizeQ8_0(row)
            case .f16:
                for v in row { let h = ReferenceKernels.floatToFP16(v); wBytes += [UInt8(h & 0xFF), UInt8(h >> 8)] }
            default: for v in row { withUnsafeBytes(of: v.bitPattern.littleEndian) { wBytes += $0 } }
            }
        }
        let wRowBytes = wBytes.count / rows
        let pool = ComputePool(threads: 2)
        for n in [1, 3, 5] {
            let x = rng.floats(n * k, 1.5)
            var xBytes: [UInt8] = []
            var expected = [Float](repeating: 0, count: n * rows)
            for t in 0..<n {
                let xt = Array(x[t * k..<(t + 1) * k])
                let wRow = { (r: Int) in Array(wBytes[r * wRowBytes..<(r + 1) * wRowBytes]) }
                switch type {
                case .q4_1:
                    let q = ReferenceKernels.quantizeQ8_1(xt)
                    xBytes += q
                    for r in 0..<rows { expected[t * rows + r] = ReferenceKernels.dotQ4_1Q8_1(wRow(r), q, k: k) }
                case .q8_0:
                    let q = ReferenceKernels.quantizeQ8_0(xt)
                    xBytes += q
                    for r in 0..<rows { expected[t * rows + r] = ReferenceKernels.dotQ8_0Q8_0(wRow(r), q, k: k) }
                case .f16:
                    for v in xt { withUnsafeBytes(of: v.bitPattern.littleEndian) { xBytes += $0 } }
                    let rounded = xt.map { ReferenceKernels.fp16ToFloat(ReferenceKernels.floatToFP16($0)) }
                    for r in 0..<rows {
                        expected[t * rows + r] = ReferenceKernels.dot(
                            ReferenceKernels.dequantizeF16(wRow(r), count: k), rounded)
                    }
                default:
                    for v in xt { withUnsafeBytes(of: v.bitPattern.littleEndian) { xBytes += $0 } }
                    for r in 0..<rows {
                        expected[t * rows + r] = ReferenceKernels.dot(Array(weights[r * k..<(r + 1) * k]), xt)
                    }
                }
            }
            let xRowBytes = xBytes.count / n
            bothPaths { path in
                for usePool in [true, false] {
                    var y = [Float](repeating: .nan, count: n * rows)
                    wBytes.withUnsafeBytes { w in
                        xBytes.withUnsafeBytes { xb in
                            y.withUnsafeMutableBufferPointer { yb in
                                var args = ck_matmul_args(
                                    type: Int32(type.rawValue), w: w.baseAddress!, w_row_bytes: wRowBytes,
                                    rows: Int32(rows), k: Int32(k), x: xb.baseAddress!, x_row_bytes: xRowBytes,
                                    n: Int32(n), y: yb.baseAddress!, ldy: Int32(rows), orders: nil)
                                ck_matmul(usePool ? pool.raw : nil, &args)
                            }
                        }
                    }
                    for i in 0..<n * rows {
                        #expect(
                            close(y[i], expected[i], rel: 1e-4, abs: 1e-4),
                            "\(type) \(path) pool=\(usePool) n=\(n) out \(i): \(y[i]) vs \(expected[i])")
                    }
                }
            }
        }
    }

    @Test(arguments: [64, 576, 100])
    func rmsNormMatchesReference(n: Int) {
        var rng = SeededRandom(seed: 9)
        let x = rng.floats(n, 4)
        let w = rng.floats(n, 2)
        var y = [Float](repeating: 0, count: n)
        ck_rmsnorm(x, w, &y, Int32(n), 1e-5)
        let expected = ReferenceKernels.rmsNorm(x, weight: w, eps: 1e-5)
        for i in 0..<n { #expect(close(y[i], expected[i], rel: 1e-5)) }
    }

    @Test func ropeMatchesReference() {
        var rng = SeededRandom(seed: 11)
        for (heads, headDim, nRot, pos) in [(3, 64, 64, 0), (9, 64, 64, 17), (2, 64, 32, 4000), (1, 8, 8, 5)] {
            let x = rng.floats(heads * headDim, 2)
            var y = x
            ck_rope(&y, Int32(heads), Int32(headDim), Int32(nRot), Int32(pos), 100000)
            let expected = ReferenceKernels.rope(x, heads: heads, headDim: headDim, nRot: nRot, pos: pos, base: 100000)
            for i in 0..<x.count {
                #expect(
                    close(y[i], expected[i], rel: 1e-3, abs: 1e-4),
                    "rope pos \(pos) index \(i): \(y[i]) vs \(expected[i])")
            }
        }
    }

    @Test func softmaxAndSiluMatchReference() {
        var rng = SeededRandom(seed: 12)
        for n in [1, 5, 16, 100] {
            var x = rng.floats(n, 8)
            let expected = ReferenceKernels.softmax(x)
            ck_softmax(&x, Int32(n))
            for i in 0..<n { #expect(close(x[i], expected[i], rel: 1e-5, abs: 1e-7)) }
        }
        bothPaths { path in
            for n in [1, 7, 16, 33, 1536] {
                let g = rng.floats(n, 12)
                let u = rng.floats(n, 2)
                var out = [Float](repeating: 0, count: n)
                ck_silu_mul(g, u, &out, Int32(n))
                for i in 0..<n {
                    let e = ReferenceKernels.silu(g[i]) * u[i]
                    #expect(close(out[i], e, rel: 1e-5, abs: 1e-6), "\(path) silu n=\(n) i=\(i): \(out[i]) vs \(e)")
                }
            }
        }
    }

    /// Causal attention over an f16 cache: one token (decode) and batches, against the plain
    /// reference per token and head; with a sliding window the reference sees only the keys in
    /// the window (the kernels mask the others).
    @Test(arguments: [
        (1, 0, 0, 64), (1, 70, 0, 64), (5, 0, 0, 64), (3, 40, 0, 64), (4, 61, 0, 64),
        (1, 70, 16, 64), (5, 0, 3, 64), (4, 61, 20, 64), (3, 100, 64, 64), (1, 130, 65, 64), (2, 30, 8, 256),
        (1, 40, 0, 256),
        // Head widths that are not a multiple of 16: a batch's fast scores must not read the
        // next head's query and key as the rest of a 16-wide step (issue #34, head width 8).
        (5, 0, 0, 8), (3, 40, 0, 8), (1, 70, 0, 8), (4, 10, 0, 24), (3, 66, 0, 40), (6, 0, 0, 12),
    ])
    func attentionMatchesReference(nTokens: Int, pos0: Int, window: Int, headDim: Int) {
        let nHead = 6
        let nKV = 2
        let kvDim = nKV * headDim
        let total = pos0 + nTokens
        var rng = SeededRandom(seed: UInt64(nTokens * 1000 + pos0 + window * 7 + headDim))
        let kCache = rng.floats(total * kvDim, 1.5).map(ReferenceKernels.floatToFP16)
        let vCache = rng.floats(total * kvDim, 1.5).map(ReferenceKernels.floatToFP16)
        let q = rng.floats(nTokens * nHead * headDim, 1.5)
        let scale = 1 / Float(headDim).squareRoot()
        let pool = ComputePool(threads: 2)
        bothPaths { path in
            var out = [Float](repeating: .nan, count: nTokens * nHead * headDim)
            let stride = nHead / nKV * (64 * headDim + total + 32)
            var scratch = [Float](repeating: 0, count: 2 * stride)
            q.withUnsafeBufferPointer { qb in
                kCache.withUnsafeBufferPointer { kb in
                    vCache.withUnsafeBufferPointer { vb in
                        out.withUnsafeMutableBufferPointer { ob in
                            scratch.withUnsafeMutableBufferPointer { sb in
                                var args = ck_attention_args(
                                    q: qb.baseAddress!, q_stride: Int32(nHead * headDim), k_cache: kb.baseAddress!,
                                    v_cache: vb.baseAddress!, kv_stride: Int32(kvDim), n_head: Int32(nHead),
                                    n_kv_head: Int32(nKV), head_dim: Int32(headDim), n_tokens: Int32(nTokens),
                                    pos0: Int32(pos0), scale: scale, out: ob.baseAddress!,
                                    out_stride: Int32(nHead * headDim), scratch: sb.baseAddress!,
                                    scratch_stride: Int32(stride), window: Int32(window), call_rows: 0, sinks: nil)
                                ck_attention(pool.raw, &args)
                            }
                        }
                    }
                }
            }
            for t in 0..<nTokens {
                for h in 0..<nHead {
                    let kvh = h / (nHead / nKV)
                    let first = window > 0 ? max(0, pos0 + t + 1 - window) : 0
                    let keys = (first...(pos0 + t)).map { j in
                        (0..<headDim).map { ReferenceKernels.fp16ToFloat(kCache[j * kvDim + kvh * headDim + $0]) }
                    }
                    let values = (first...(pos0 + t)).map { j in
                        (0..<headDim).map { ReferenceKernels.fp16ToFloat(vCache[j * kvDim + kvh * headDim + $0]) }
                    }
                    let query = Array(q[(t * nHead + h) * headDim..<(t * nHead + h + 1) * headDim])
                    let expected = ReferenceKernels.attention(
                        query: query, keys: keys, values: values, scale: scale, roundWeights: true)
                    for d in 0..<headDim {
                        let got = out[(t * nHead + h) * headDim + d]
                        #expect(
                            close(got, expected[d], rel: 2e-3, abs: 2e-3),
                            "\(path) t=\(t) h=\(h) d=\(d): \(got) vs \(expected[d])")
                    }
                }
            }
        }
    }

    /// RoPE in both pairings, with frequency factors and linear scaling, against a float64
    /// reference written from the formula (angle = scale · pos · base^(−2i/n_rot) / factor_i).
    @Test(arguments: [false, true])
    func ropeMatchesReference(halves: Bool) {
        let heads = 3
        let headDim = 32
        let nRot = 24
        let base: Float = 500_000
        var rng = SeededRandom(seed: halves ? 7 : 8)
        let factors = (0..<(nRot / 2)).map { i in Float(1 + i % 4) * 2 }
        for (position, scale) in [(0, Float(1)), (5, 1), (1234, 1), (77, 0.25)] {
            let input = rng.floats(heads * headDim, 2)
            var out = input
            factors.withUnsafeBufferPointer { f in
                ck_rope_ext(
                    &out, Int32(heads), Int32(headDim), Int32(nRot), Int32(position), base, scale, f.baseAddress,
                    halves ? 1 : 0)
            }
            for h in 0..<heads {
                for i in 0..<(headDim / 2) {
                    let (a, b) = halves ? (i < nRot / 2 ? (i, i + nRot / 2) : (-1, -1)) : (2 * i, 2 * i + 1)
                    guard a >= 0, (halves || b < nRot) else { continue }
                    let frequency: Double = pow(Double(base), -2 * Double(i) / Double(nRot))
                    let angle: Double = Double(scale) * Double(position) * frequency / Double(factors[i])
                    let x0 = Double(input[h * headDim + a])
                    let x1 = Double(input[h * headDim + b])
                    let e0 = x0 * cos(angle) - x1 * sin(angle)
                    let e1 = x0 * sin(angle) + x1 * cos(angle)
                    #expect(abs(Double(out[h * headDim + a]) - e0) < 1e-3, "pos \(position) head \(h) pair \(i)")
                    #expect(abs(Double(out[h * headDim + b]) - e1) < 1e-3, "pos \(position) head \(h) pair \(i)")
                }
                // Dimensions past n_rot are left alone.
                let rest = halves ? Array(nRot..<headDim) : Array(nRot..<headDim)
                for d in rest { #expect(out[h * headDim + d] == input[h * headDim + d]) }
            }
        }
    }

    /// GELU-tanh gated as ggml's CPU backend computes it: input and result through f16, 0 at or
    /// below -10, the identity at or above 10; against a float64 formula rounded the same way.
    @Test func geluMulMatchesReference() {
        var rng = SeededRandom(seed: 11)
        let gate = rng.floats(4000, 12) + [-10, -10.5, 10, 13.25, 0, -0.0]
        let up = rng.floats(gate.count, 2)
        var out = [Float](repeating: .nan, count: gate.count)
        ck_gelu_mul(gate, up, &out, Int32(gate.count))
        for i in gate.indices {
            let g = gate[i]
            let expected: Float
            if g <= -10 {
                expected = 0
            } else if g >= 10 {
                expected = g * up[i]
            } else {
                let x = Double(Float(Float16(g)))
                let gelu = 0.5 * x * (1 + tanh(0.7978845608028654 * x * (1 + 0.044715 * x * x)))
                expected = Float(Float16(Float(gelu))) * up[i]
            }
            // One f16 step of the activation (the float and double formulas may round apart; near
            // zero the f16 steps are absolute).
            let tolerance = abs(expected) * 1e-3 + abs(up[i]) * 1e-6
            #expect(abs(out[i] - expected) <= tolerance, "gelu(\(g)) * \(up[i]): \(out[i]) vs \(expected)")
        }
    }
}
