import CKernels
import Foundation
import Testing

@testable import Engine

/// `ck_attention_flash_rows` (llama.cpp's row-by-row flash attention arithmetic, which Gemma 3
/// uses): against a float64 softmax attention over the same f16 keys and values, within the
/// f16 accumulator's rounding; the AVX2 path gives the portable path's bits; one position gives
/// that value row exactly; keys outside the sliding window have no effect at all. The same for
/// its tiled form (micro-batches of 64+ rows, f32 accumulators) and its split form (a lone row
/// over 256+ positions). Their bits against llama.cpp's are GemmaReferenceTests' business.
struct GemmaFlashAttentionTests {
    struct Setup {
        let nHead = 4, nKV = 1, hd = 256
        var nTokens: Int
        var pos0: Int
        var q: [Float]
        var k: [UInt16]
        var v: [UInt16]
        var keys: Int { pos0 + nTokens }

        init(nTokens: Int, pos0: Int, seed: UInt64) {
            self.nTokens = nTokens
            self.pos0 = pos0
            var g = SplitMix(seed)
            let (nHead, hd) = (4, 256)
            q = (0..<nTokens * nHead * hd).map { _ in g.float() * 4 }
            k = (0..<(pos0 + nTokens) * hd).map { _ in ck_fp32_to_fp16(g.float() * 4) }
            v = (0..<(pos0 + nTokens) * hd).map { _ in ck_fp32_to_fp16(g.float() * 3) }
        }

        enum Kernel {
            case rows
            case tiled(OpaquePointer?)
            case split(Int)
        }

        func run(window: Int = 0, kernel: Kernel = .rows) -> [Float] {
            var out = [Float](repeating: .nan, count: nTokens * nHead * hd)
            q.withUnsafeBufferPointer { qp in
                k.withUnsafeBufferPointer { kp in
                    v.withUnsafeBufferPointer { vp in
                        out.withUnsafeMutableBufferPointer { op in
                            var args = ck_attention_args(
                                q: qp.baseAddress, q_stride: Int32(nHead * hd), k_cache: kp.baseAddress,
                                v_cache: vp.baseAddress, kv_stride: Int32(nKV * hd), n_head: Int32(nHead),
                                n_kv_head: Int32(nKV), head_dim: Int32(hd), n_tokens: Int32(nTokens),
                                pos0: Int32(pos0), scale: 0.0625, out: op.baseAddress, out_stride: Int32(nHead * hd),
                                scratch: nil, scratch_stride: 0, window: Int32(window), call_rows: 0, sinks: nil)
                            switch kernel {
                            case .rows: ck_attention_flash_rows(&args)
                            case .tiled(let pool): ck_attention_flash_tiled(pool, &args)
                            case .split(let chunks): ck_attention_flash_split(&args, Int32(chunks))
                            }
                        }
                    }
                }
            }
            return out
        }

        /// Float64 softmax attention of token t, head h over keys first...pos0 + t.
        func reference(t: Int, h: Int, window: Int = 0) -> [Double] {
            let pos = pos0 + t
            let first = window > 0 ? max(0, pos - window + 1) : 0
            let qrow = (0..<hd).map { Double(q[(t * nHead + h) * hd + $0]) * 0.0625 }
            let scores = (first...pos).map { j in
                (0..<hd).reduce(0.0) { $0 + qrow[$1] * Double(ck_fp16_to_fp32(k[j * hd + $1])) }
            }
            let m = scores.max()!
            let e = scores.map { exp($0 - m) }
            let s = e.reduce(0, +)
            return (0..<hd).map { d in
                zip(first...pos, e).reduce(0.0) { $0 + $1.1 / s * Double(ck_fp16_to_fp32(v[$1.0 * hd + d])) }
            }
        }
    }

    @Test func closeToFloat64Attention() {
        let s = Setup(nTokens: 6, pos0: 3, seed: 7)
        let out = s.run()
        for t in 0..<s.nTokens {
            for h in 0..<s.nHead {
                let r = s.reference(t: t, h: h)
                let scale = r.map(abs).max()!
                let worst = (0..<s.hd).map { abs(Double(out[(t * s.nHead + h) * s.hd + $0]) - r[$0]) }.max()!
                // f16 query and accumulator: a few f16 roundings of the largest value.
                #expect(worst <= 4e-3 * scale, "token \(t) head \(h): \(worst) of \(scale)")
            }
        }
    }

    @Test func fastPathGivesThePortableBits() {
        for (n, pos0, window) in [(7, 0, 0), (1, 40, 0), (5, 30, 9)] {
            let s = Setup(nTokens: n, pos0: pos0, seed: UInt64(n * 100 + pos0))
            ck_set_fast_paths(0)
            let portable = s.run(window: window)
            ck_set_fast_paths(1)
            let fast = s.run(window: window)
            #expect(fast.map(\.bitPattern) == portable.map(\.bitPattern), "\(n) rows at \(pos0)")
        }
    }

    @Test func onePositionGivesItsValueRow() {
        let s = Setup(nTokens: 1, pos0: 0, seed: 3)
        let out = s.run()
        for h in 0..<s.nHead {
            for d in 0..<s.hd { #expect(out[h * s.hd + d] == ck_fp16_to_fp32(s.v[d])) }
        }
    }

    @Test func keysOutsideTheWindowHaveNoEffect() {
        var s = Setup(nTokens: 4, pos0: 12, seed: 11)
        let window = 5
        let before = s.run(window: window)
        // The earliest key any token sees is pos0 - window + 1 = 8: change everything before it.
        for i in 0..<(8 * s.hd) {
            s.k[i] = ck_fp32_to_fp16(-7)
            s.v[i] = ck_fp32_to_fp16(100)
        }
        #expect(s.run(window: window) == before)
        #expect(s.run() != before, "without the window the changed keys count")
        let r = s.reference(t: 3, h: 2, window: window)
        let row = Array(before[(3 * s.nHead + 2) * s.hd..<(3 * s.nHead + 3) * s.hd])
        #expect(zip(row, r).allSatisfy { abs(Double($0) - $1) <= 4e-3 * r.map(abs).max()! })
    }
}

extension GemmaFlashAttentionTests {
    func worstRelative(_ s: Setup, _ out: [Float], window: Int = 0) -> Double {
        var worst = 0.0
        for t in 0..<s.nTokens {
            for h in 0..<s.nHead {
                let r = s.reference(t: t, h: h, window: window)
                let scale = r.map(abs).max()!
                for d in 0..<s.hd { worst = max(worst, abs(Double(out[(t * s.nHead + h) * s.hd + d]) - r[d]) / scale) }
            }
        }
        return worst
    }

    @Test func tiledIsAttentionWithFloatAccumulators() {
        // 70 rows from position 60: key tiles 0-63, 64-127 and 128-129, the first partly hidden
        // by the window.
        let s = Setup(nTokens: 70, pos0: 60, seed: 21)
        let plain = worstRelative(s, s.run(kernel: .tiled(nil)))
        #expect(plain <= 1e-5, "worst relative error \(plain)")
        let windowed = worstRelative(s, s.run(window: 90, kernel: .tiled(nil)), window: 90)
        #expect(windowed <= 1e-5, "worst relative error \(windowed) with a window")
        // The f16 accumulator of the row-by-row form is coarser: the two are different arithmetics.
        #expect(s.run(kernel: .tiled(nil)) != s.run())
    }

    @Test func tiledBitsDoNotDependOnThreadsOrPath() {
        let s = Setup(nTokens: 67, pos0: 5, seed: 5)
        let pool = ck_pool_create(2)
        defer { ck_pool_destroy(pool) }
        ck_set_fast_paths(0)
        let portable = s.run(window: 40, kernel: .tiled(nil))
        ck_set_fast_paths(1)
        let fast = s.run(window: 40, kernel: .tiled(nil))
        let pooled = s.run(window: 40, kernel: .tiled(pool))
        #expect(fast.map(\.bitPattern) == portable.map(\.bitPattern))
        #expect(pooled.map(\.bitPattern) == fast.map(\.bitPattern))
    }

    @Test func tiledIgnoresKeysOutsideTheWindow() {
        var s = Setup(nTokens: 64, pos0: 70, seed: 13)
        let window = 30
        let before = s.run(window: window, kernel: .tiled(nil))
        // The earliest key any token sees is 70 - 30 + 1 = 41.
        for i in 0..<(41 * s.hd) {
            s.k[i] = ck_fp32_to_fp16(-7)
            s.v[i] = ck_fp32_to_fp16(100)
        }
        #expect(s.run(window: window, kernel: .tiled(nil)) == before)
    }

    @Test func splitMergesItsRanges() {
        // One row at position 300: a KV view of 512 cells, ranges 0-255 and 256-511.
        let s = Setup(nTokens: 1, pos0: 300, seed: 17)
        #expect(s.run(kernel: .split(1)).map(\.bitPattern) == s.run().map(\.bitPattern), "one range is the row form")
        let two = s.run(kernel: .split(2))
        #expect(two != s.run(), "two ranges merge in another order")
        let error = worstRelative(s, two)
        #expect(error <= 4e-3, "worst relative error \(error)")
        let windowed = worstRelative(s, s.run(window: 100, kernel: .split(2)), window: 100)
        #expect(windowed <= 4e-3, "a window inside the second range: \(windowed)")
    }
}

/// A small deterministic generator for test data.
private struct SplitMix {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    mutating func float() -> Float { Float(Int64(bitPattern: next()) >> 40) / Float(1 << 23) }
}
