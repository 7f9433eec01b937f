import CKernels
import Foundation
import Testing

@testable import Engine

/// Attention sinks (gpt-oss's `attn_sinks`: one logit per query head that joins the softmax's
/// denominator and weighs no value) in every non-flash kernel: decode rows (grouped and per
/// head), a batch's tiles, the decode split over the pool past 256 keys, and the q8_0 cache's
/// kernels; against a float64 softmax written from the definition
/// w_j = exp(s_j) / (Σ exp(s_i) + exp(sink)), on every path.
@Suite(.serialized)
struct AttentionSinkTests {
    /// Σ_j w_j v_j in Double for one head; keys and values as the cache stores them (f16), the
    /// query rounded to f16 as the kernels round it.
    static func reference(query: [Float], keys: [[Float]], values: [[Float]], scale: Float, sink: Float) -> [Double] {
        let q = query.map { Double(ReferenceKernels.roundToFP16($0)) }
        let scores = keys.map { k in zip(q, k).reduce(0.0) { $0 + $1.0 * Double($1.1) } * Double(scale) }
        let m = max(scores.max() ?? -.infinity, Double(sink))
        let e = scores.map { exp($0 - m) }
        let denominator = e.reduce(0, +) + exp(Double(sink) - m)
        var out = [Double](repeating: 0, count: query.count)
        for (j, v) in values.enumerated() {
            for d in out.indices { out[d] += e[j] / denominator * Double(v[d]) }
        }
        return out
    }

    struct Shape: Sendable, CustomStringConvertible {
        let tokens: Int
        let pos0: Int
        let window: Int
        let headDim: Int
        let heads: Int
        let kvHeads: Int
        var description: String { "\(tokens) rows at \(pos0), window \(window), \(heads)/\(kvHeads) × \(headDim)" }
    }

    static let shapes: [Shape] = [
        Shape(tokens: 1, pos0: 0, window: 0, headDim: 64, heads: 6, kvHeads: 2),
        Shape(tokens: 1, pos0: 70, window: 0, headDim: 64, heads: 6, kvHeads: 2),
        Shape(tokens: 5, pos0: 0, window: 0, headDim: 64, heads: 6, kvHeads: 2),
        Shape(tokens: 4, pos0: 61, window: 20, headDim: 32, heads: 8, kvHeads: 2),
        Shape(tokens: 3, pos0: 40, window: 0, headDim: 8, heads: 4, kvHeads: 4),
        Shape(tokens: 1, pos0: 300, window: 0, headDim: 64, heads: 6, kvHeads: 3),  // decode split
        Shape(tokens: 1, pos0: 300, window: 128, headDim: 64, heads: 6, kvHeads: 3),
        Shape(tokens: 2, pos0: 10, window: 0, headDim: 12, heads: 2, kvHeads: 1),  // no fast shape
    ]

    @Test(arguments: shapes)
    func f16CacheMatchesFloat64Softmax(shape: Shape) {
        let kvDim = shape.kvHeads * shape.headDim
        let total = shape.pos0 + shape.tokens
        var rng = SeededRandom(seed: UInt64(shape.tokens * 7919 + shape.pos0 * 31 + shape.headDim))
        let kCache = rng.floats(total * kvDim, 1.5).map(ReferenceKernels.floatToFP16)
        let vCache = rng.floats(total * kvDim, 1.5).map(ReferenceKernels.floatToFP16)
        let q = rng.floats(shape.tokens * shape.heads * shape.headDim, 1.5)
        // Sinks from well below the scores to well above them (the last head's dominates).
        let sinks = (0..<shape.heads).map { Float($0 * 3) - 4 + rng.float() }
        let scale = 1 / Float(shape.headDim).squareRoot()
        let pool = ComputePool(threads: 2)
        bothPaths { path in
            let out = Self.attend(
                shape: shape, q: q, k: kCache, v: vCache, scale: scale, sinks: sinks, pool: pool, q8: false)
            check(
                shape: shape, out: out, q: q, k: kCache.map(ReferenceKernels.fp16ToFloat),
                v: vCache.map(ReferenceKernels.fp16ToFloat), scale: scale, sinks: sinks, tolerance: 3e-3, what: path)
        }
    }

    /// The q8_0 cache's decode kernels, against the same softmax over the quantized keys and
    /// values (the query quantized to q8_0 there, hence the wider bound).
    @Test(arguments: shapes.filter { $0.headDim % 32 == 0 })
    func q8CacheMatchesFloat64Softmax(shape: Shape) {
        let kvDim = shape.kvHeads * shape.headDim
        let total = shape.pos0 + shape.tokens
        var rng = SeededRandom(seed: UInt64(shape.tokens * 104_729 + shape.pos0 * 17 + shape.headDim))
        let keys = rng.floats(total * kvDim, 1.5)
        let values = rng.floats(total * kvDim, 1.5)
        let q = rng.floats(shape.tokens * shape.heads * shape.headDim, 1.5)
        let sinks = (0..<shape.heads).map { Float($0 * 3) - 4 + rng.float() }
        let scale = 1 / Float(shape.headDim).squareRoot()
        let kq = ReferenceKernels.quantizeQ8_0(keys)
        let vq = ReferenceKernels.quantizeQ8_0(values)
        let kWide = ReferenceKernels.dequantizeQ8_0(kq, count: keys.count)
        let vWide = ReferenceKernels.dequantizeQ8_0(vq, count: values.count)
        bothPaths { path in
            let out = kq.withUnsafeBytes { kb in
                vq.withUnsafeBytes { vb in
                    Self.attend(
                        shape: shape, q: q, k: kb.bindMemory(to: UInt16.self), v: vb.bindMemory(to: UInt16.self),
                        scale: scale, sinks: sinks, pool: nil, q8: true)
                }
            }
            check(
                shape: shape, out: out, q: q, k: kWide, v: vWide, scale: scale, sinks: sinks, tolerance: 0.03,
                what: "q8 \(path)")
        }
    }

    /// Without sinks (NULL) the kernels give exactly what a sink of -inf gives: no bit moves for
    /// the other families.
    @Test func minusInfinitySinkIsNoSink() {
        let shape = Shape(tokens: 5, pos0: 61, window: 0, headDim: 64, heads: 6, kvHeads: 2)
        let kvDim = shape.kvHeads * shape.headDim
        var rng = SeededRandom(seed: 5)
        let k = rng.floats((shape.pos0 + shape.tokens) * kvDim, 1.5).map(ReferenceKernels.floatToFP16)
        let v = rng.floats((shape.pos0 + shape.tokens) * kvDim, 1.5).map(ReferenceKernels.floatToFP16)
        let q = rng.floats(shape.tokens * shape.heads * shape.headDim, 1.5)
        let none = [Float](repeating: -.infinity, count: shape.heads)
        bothPaths { path in
            let a = Self.attend(shape: shape, q: q, k: k, v: v, scale: 0.125, sinks: nil, pool: nil, q8: false)
            let b = Self.attend(shape: shape, q: q, k: k, v: v, scale: 0.125, sinks: none, pool: nil, q8: false)
            #expect(a.map(\.bitPattern) == b.map(\.bitPattern), "\(path)")
        }
    }

    func check(
        shape: Shape, out: [Float], q: [Float], k: [Float], v: [Float], scale: Float, sinks: [Float],
        tolerance: Double, what: String
    ) {
        let kvDim = shape.kvHeads * shape.headDim
        let hd = shape.headDim
        var worst = 0.0
        for t in 0..<shape.tokens {
            for h in 0..<shape.heads {
                let g = h / (shape.heads / shape.kvHeads)
                let last = shape.pos0 + t
                let first = shape.window > 0 ? max(0, last + 1 - shape.window) : 0
                let keys = (first...last).map { j in Array(k[(j * kvDim + g * hd)..<(j * kvDim + (g + 1) * hd)]) }
                let values = (first...last).map { j in Array(v[(j * kvDim + g * hd)..<(j * kvDim + (g + 1) * hd)]) }
                let query = Array(q[((t * shape.heads + h) * hd)..<((t * shape.heads + h + 1) * hd)])
                let expected = Self.reference(query: query, keys: keys, values: values, scale: scale, sink: sinks[h])
                for d in 0..<hd {
                    worst = max(worst, abs(Double(out[(t * shape.heads + h) * hd + d]) - expected[d]))
                }
            }
        }
        #expect(worst <= tolerance, "\(what) \(shape): largest difference \(worst)")
    }

    static func attend(
        shape: Shape, q: [Float], k: UnsafeBufferPointer<UInt16>, v: UnsafeBufferPointer<UInt16>, scale: Float,
        sinks: [Float]?, pool: ComputePool?, q8: Bool
    ) -> [Float] {
        let width = shape.heads * shape.headDim
        var out = [Float](repeating: .nan, count: shape.tokens * width)
        let stride = ck_attention_scratch_floats(
            Int32(shape.heads), Int32(shape.kvHeads), Int32(shape.headDim), Int32(shape.pos0 + shape.tokens))
        var scratch = [Float](repeating: 0, count: 2 * stride)
        let sinkValues = sinks ?? []
        q.withUnsafeBufferPointer { qb in
            out.withUnsafeMutableBufferPointer { ob in
                scratch.withUnsafeMutableBufferPointer { sb in
                    sinkValues.withUnsafeBufferPointer { sk in
                        var args = ck_attention_args(
                            q: qb.baseAddress!, q_stride: Int32(width), k_cache: k.baseAddress!,
                            v_cache: v.baseAddress!, kv_stride: Int32(shape.kvHeads * shape.headDim),
                            n_head: Int32(shape.heads), n_kv_head: Int32(shape.kvHeads),
                            head_dim: Int32(shape.headDim), n_tokens: Int32(shape.tokens), pos0: Int32(shape.pos0),
                            scale: scale, out: ob.baseAddress!, out_stride: Int32(width), scratch: sb.baseAddress!,
                            scratch_stride: Int32(stride), window: Int32(shape.window), call_rows: 0,
                            sinks: sinks == nil ? nil : sk.baseAddress)
                        if q8 {
                            ck_attention_q8_0_many(pool?.raw, &args, 1)
                        } else {
                            ck_attention(pool?.raw, &args)
                        }
                    }
                }
            }
        }
        return out
    }

    static func attend(
        shape: Shape, q: [Float], k: [UInt16], v: [UInt16], scale: Float, sinks: [Float]?, pool: ComputePool?,
        q8: Bool
    ) -> [Float] {
        k.withUnsafeBufferPointer { kb in
            v.withUnsafeBufferPointer { vb in
                attend(shape: shape, q: q, k: kb, v: vb, scale: scale, sinks: sinks, pool: pool, q8: q8)
            }
        }
    }
}
