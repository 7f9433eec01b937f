import CKernels
import Foundation
import Testing

@testable import Engine

/// `kv_cache_type` q8_0: the write path stores exactly ck_quantize_row_q8_0 of the rotated keys
/// and of the values; attention over the quantized cache is the softmax-weighted sum it
/// describes (checked in double precision over the same quantized numbers, windows included,
/// on every path); the pool changes no bit.
@Suite(.serialized)
struct KVCacheQ8Tests {
    static let blockBytes = 34

    /// `rows` rows of `width` floats as q8_0 blocks (bytes) and the values they decode to.
    static func quantized(_ values: [Float], rows: Int, width: Int) -> (bytes: [UInt8], decoded: [Float]) {
        let rowBytes = width / 32 * blockBytes
        var bytes = [UInt8](repeating: 0, count: rows * rowBytes)
        var decoded = [Float](repeating: 0, count: rows * width)
        values.withUnsafeBufferPointer { v in
            bytes.withUnsafeMutableBytes { b in
                decoded.withUnsafeMutableBufferPointer { d in
                    for r in 0..<rows {
                        let block = (b.baseAddress! + r * rowBytes).assumingMemoryBound(to: ck_block_q8_0.self)
                        ck_quantize_row_q8_0(v.baseAddress! + r * width, block, Int32(width))
                        ck_dequantize_row(Int32(CK_TYPE_Q8_0), block, d.baseAddress! + r * width, Int32(width))
                    }
                }
            }
        }
        return (bytes, decoded)
    }

    struct Shape: CustomStringConvertible {
        var nHead: Int
        var nKV: Int
        var headDim: Int
        var nTokens: Int
        var pos0: Int
        var window = 0
        var description: String {
            "\(nHead)/\(nKV) heads of \(headDim), \(nTokens) tokens from \(pos0), window \(window)"
        }
    }

    static let shapes: [Shape] = [
        Shape(nHead: 9, nKV: 3, headDim: 64, nTokens: 1, pos0: 0),
        Shape(nHead: 9, nKV: 3, headDim: 64, nTokens: 1, pos0: 300),
        Shape(nHead: 9, nKV: 3, headDim: 64, nTokens: 37, pos0: 20),
        Shape(nHead: 4, nKV: 1, headDim: 256, nTokens: 5, pos0: 70, window: 16),
        Shape(nHead: 4, nKV: 4, headDim: 32, nTokens: 64, pos0: 0, window: 8),
    ]

    /// The kernel's output for `shape` over random data, and the double-precision reference over
    /// the same quantized keys, values and queries.
    static func run(_ shape: Shape, pool: ComputePool?) -> (got: [Float], expected: [Double]) {
        let hd = shape.headDim
        let kvDim = shape.nKV * hd
        let qDim = shape.nHead * hd
        let total = shape.pos0 + shape.nTokens
        var rng = SeededRandom(seed: UInt64(hd * 1000 + total))
        let k = quantized(rng.floats(total * kvDim, 2), rows: total, width: kvDim)
        let v = quantized(rng.floats(total * kvDim, 2), rows: total, width: kvDim)
        let qValues = rng.floats(shape.nTokens * qDim, 1.5)
        let q = quantized(qValues, rows: shape.nTokens * shape.nHead, width: hd)
        let scale = 1 / Float(hd).squareRoot()
        var out = [Float](repeating: .nan, count: shape.nTokens * qDim)
        let stride = total + 16
        var scratch = [Float](repeating: .nan, count: 2 * stride)
        qValues.withUnsafeBufferPointer { qb in
            k.bytes.withUnsafeBytes { kb in
                v.bytes.withUnsafeBytes { vb in
                    out.withUnsafeMutableBufferPointer { ob in
                        scratch.withUnsafeMutableBufferPointer { sb in
                            var args = ck_attention_args(
                                q: qb.baseAddress!, q_stride: Int32(qDim),
                                k_cache: kb.baseAddress!.assumingMemoryBound(to: UInt16.self),
                                v_cache: vb.baseAddress!.assumingMemoryBound(to: UInt16.self), kv_stride: Int32(kvDim),
                                n_head: Int32(shape.nHead), n_kv_head: Int32(shape.nKV), head_dim: Int32(hd),
                                n_tokens: Int32(shape.nTokens), pos0: Int32(shape.pos0), scale: scale,
                                out: ob.baseAddress!, out_stride: Int32(qDim), scratch: sb.baseAddress!,
                                scratch_stride: Int32(stride), window: Int32(shape.window), call_rows: 0, sinks: nil)
                            ck_attention_q8_0_many(pool?.raw, &args, 1)
                        }
                    }
                }
            }
        }
        var expected = [Double](repeating: 0, count: shape.nTokens * qDim)
        let group = shape.nHead / shape.nKV
        for t in 0..<shape.nTokens {
            let pos = shape.pos0 + t
            let first = shape.window > 0 ? max(0, pos - shape.window + 1) : 0
            for h in 0..<shape.nHead {
                let g = h / group
                let qRow = (t * shape.nHead + h) * hd
                let scores = (first...pos).map { j in
                    (0..<hd).reduce(0.0) {
                        $0 + Double(q.decoded[qRow + $1]) * Double(k.decoded[j * kvDim + g * hd + $1])
                    }
                        * Double(scale)
                }
                let top = scores.max()!
                let weights = scores.map { Foundation.exp($0 - top) }
                let sum = weights.reduce(0, +)
                for d in 0..<hd {
                    var acc = 0.0
                    for (i, j) in (first...pos).enumerated() {
                        acc += weights[i] * Double(v.decoded[j * kvDim + g * hd + d])
                    }
                    expected[t * qDim + h * hd + d] = acc / sum
                }
            }
        }
        return (out, expected)
    }

    @Test(arguments: shapes)
    func attentionIsTheSoftmaxOverTheQuantizedCache(shape: Shape) {
        let pool = ComputePool(threads: 2)
        bothPaths { path in
            let (got, expected) = Self.run(shape, pool: pool)
            let worst = zip(got, expected).map { abs(Double($0) - $1) }.max()!
            // Values are at most 2 in size; f32 sums over a few hundred keys stay within ~1e-5.
            #expect(worst < 1e-4, "\(path) \(shape): max |Δ| \(worst)")
        }
    }

    /// Split over the pool or not, each path gives the same bits (a worker takes the path of the
    /// thread that started the task).
    @Test(arguments: shapes)
    func thePoolChangesNoBit(shape: Shape) {
        let pool = ComputePool(threads: 2)
        bothPaths { path in
            let pooled = Self.run(shape, pool: pool).got
            let alone = Self.run(shape, pool: nil).got
            #expect(pooled.map(\.bitPattern) == alone.map(\.bitPattern), "\(path) \(shape)")
        }
    }

    /// RoPE into a q8_0 cache rotates q and k exactly as the f16 write does, and stores
    /// ck_quantize_row_q8_0 of the rotated keys and of the values.
    @Test func ropeWritesQuantizedRows() {
        let (nHead, nKV, hd, n, pos0) = (9, 3, 64, 70, 5)
        let kvDim = nKV * hd
        var rng = SeededRandom(seed: 7)
        let q0 = rng.floats(n * nHead * hd, 2)
        let k0 = rng.floats(n * kvDim, 2)
        let v0 = rng.floats(n * kvDim, 2)
        let pool = ComputePool(threads: 2)
        func rope(q8: Bool) -> (q: [Float], k: [Float], kc: [UInt8], vc: [UInt8]) {
            var q = q0
            var k = k0
            let rowBytes = q8 ? kvDim / 32 * Self.blockBytes : kvDim * 2
            var kc = [UInt8](repeating: 0, count: (pos0 + n) * rowBytes)
            var vc = kc
            q.withUnsafeMutableBufferPointer { qb in
                k.withUnsafeMutableBufferPointer { kb in
                    v0.withUnsafeBufferPointer { vb in
                        kc.withUnsafeMutableBytes { kcb in
                            vc.withUnsafeMutableBytes { vcb in
                                var args = ck_rope_kv_args(
                                    q: qb.baseAddress!, q_stride: Int32(nHead * hd), n_head: Int32(nHead),
                                    k: kb.baseAddress!, v: vb.baseAddress!, kv_stride: Int32(kvDim),
                                    n_kv_head: Int32(nKV), head_dim: Int32(hd), n_rot: Int32(hd), pos0: Int32(pos0),
                                    n_tokens: Int32(n), base: 10000, freq_scale: 1, freq_factors: nil, halves: 1,
                                    k_cache: kcb.baseAddress!.assumingMemoryBound(to: UInt16.self),
                                    v_cache: vcb.baseAddress!.assumingMemoryBound(to: UInt16.self), yarn: nil,
                                    q_scale: nil)
                                if q8 {
                                    ck_rows_rope_kv_q8_0(pool.raw, &args)
                                } else {
                                    ck_rows_rope_kv(pool.raw, &args)
                                }
                            }
                        }
                    }
                }
            }
            return (q, k, kc, vc)
        }
        let f16 = rope(q8: false)
        let q8 = rope(q8: true)
        #expect(q8.q.map(\.bitPattern) == f16.q.map(\.bitPattern))
        #expect(q8.k.map(\.bitPattern) == f16.k.map(\.bitPattern))
        let rowBytes = kvDim / 32 * Self.blockBytes
        let keys = Self.quantized(q8.k, rows: n, width: kvDim).bytes
        let values = Self.quantized(v0, rows: n, width: kvDim).bytes
        #expect(Array(q8.kc[(pos0 * rowBytes)...]) == keys)
        #expect(Array(q8.vc[(pos0 * rowBytes)...]) == values)
        #expect(q8.kc[..<(pos0 * rowBytes)].allSatisfy { $0 == 0 }, "rows before pos0 are not written")
    }

    /// A prompt chunk's attention reads its sequence's cache widened to f16: each value d × q,
    /// rounded once.
    @Test func wideningToF16RoundsEachDecodedValueOnce() {
        let (rows, width) = (40, 192)
        var rng = SeededRandom(seed: 11)
        let (bytes, decoded) = Self.quantized(rng.floats(rows * width, 3), rows: rows, width: width)
        var wide = [UInt16](repeating: 0xFFFF, count: rows * width + 1)
        bytes.withUnsafeBytes { b in
            ck_kv_q8_0_to_f16(b.baseAddress!.assumingMemoryBound(to: UInt16.self), &wide, Int32(rows), Int32(width))
        }
        #expect(Array(wide.prefix(rows * width)) == decoded.map(ReferenceKernels.floatToFP16))
        #expect(wide.last == 0xFFFF, "nothing written past the rows")
    }

    @Test func aHeadSizeThatIsNotAMultipleOf32IsRefused() throws {
        // The tiny model's heads are 16 wide.
        let path = try TinyModel().write()
        let error = #expect(throws: ModelError.self) {
            _ = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1, kvCacheType: .q8_0)
        }
        #expect(error?.description.contains("kv_cache_type q8_0") == true)
    }

    @Test func aCacheOfTheOtherTypeIsRefused() throws {
        let path = try TinyModel().write()
        let model = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1)
        let other = KVCache(layers: model.config.blockCount, kvDim: model.config.kvDim, capacity: 8, type: .q8_0)
        var logits = [Float](repeating: 0, count: model.config.vocabularySize)
        #expect(throws: ModelError.cacheFromAnotherModel) {
            try logits.withUnsafeMutableBufferPointer { try model.forward(tokens: [1], cache: other, logits: $0) }
        }
    }
}
