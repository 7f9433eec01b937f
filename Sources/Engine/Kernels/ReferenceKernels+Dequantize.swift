/// Plain dequantizers for every weight type matrix products take, from ggml's block layouts
/// (little-endian bytes), written after ggml's loop structure rather than the C kernels' so the
/// two check each other; tests hold both against PyPI gguf's numpy dequantizers. Also Q8_K
/// activation quantization with ggml's rounding, and a dot product of any weight row with its
/// activation form through these dequantizers (in Double: what the integer kernels approximate).
extension ReferenceKernels {
    /// `count` values of a `type` tensor; nil for a type without a dequantizer here.
    static func dequantize(_ bytes: [UInt8], type: GGMLType, count: Int) -> [Float]? {
        switch type {
        case .f32: return (0..<count).map { Float(bitPattern: le32(bytes, 4 * $0)) }
        case .f16: return (0..<count).map { fp16ToFloat(le16(bytes, 2 * $0)) }
        case .bf16: return (0..<count).map { Float(bitPattern: UInt32(le16(bytes, 2 * $0)) << 16) }
        case .q8_0, .q4_0, .q4_1, .q5_0, .q5_1, .q8_1:
            return blocks(bytes, type: type, count: count, small)
        case .q2_K: return blocks(bytes, type: type, count: count, q2K)
        case .q3_K: return blocks(bytes, type: type, count: count, q3K)
        case .q4_K, .q5_K: return blocks(bytes, type: type, count: count, q45K)
        case .q6_K: return blocks(bytes, type: type, count: count, q6K)
        case .mxfp4: return blocks(bytes, type: type, count: count, mxfp4)
        case .q8_K:
            return blocks(bytes, type: type, count: count) { b, _ in
                let d = Float(bitPattern: le32(b, 0))
                return (0..<256).map { d * Float(Int8(bitPattern: b[4 + $0])) }
            }
        case .i8, .i16, .i32, .i64, .f64: return nil
        }
    }

    /// Q8_K: per 256 values, max = the first value of largest magnitude, iscale = -127 / max,
    /// q = min(127, round-half-even(iscale · x)), d = 1 / iscale, bsums = sums of 16 q.
    static func quantizeQ8_K(_ x: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        for b in stride(from: 0, to: x.count, by: 256) {
            let block = Array(x[b..<b + 256])
            var amax: Float = 0
            var max: Float = 0
            for v in block where abs(v) > amax {
                amax = abs(v)
                max = v
            }
            guard amax != 0 else {
                out.append(contentsOf: [UInt8](repeating: 0, count: 292))
                continue
            }
            let iscale = -127 / max
            let q = block.map { Int8(min(127, (iscale * $0).rounded(.toNearestOrEven))) }
            let d = 1 / iscale
            out.append(contentsOf: withUnsafeBytes(of: d.bitPattern.littleEndian, Array.init))
            out.append(contentsOf: q.map { UInt8(bitPattern: $0) })
            for g in 0..<16 {
                let sum = Int16(q[16 * g..<16 * g + 16].reduce(0) { $0 + Int($1) })
                out.append(contentsOf: withUnsafeBytes(of: sum.littleEndian, Array.init))
            }
        }
        return out
    }

    /// Σ dequant(w)·dequant(a) in Double, `a` in `type.activationForm` (f32 bytes for float types).
    /// Against Q8_1 the weights' mins multiply the activations' stored sums `s` (fp16(d · Σq)), as
    /// ggml defines that product.
    static func dot(weights w: [UInt8], type: GGMLType, activations a: [UInt8], k: Int) -> Float {
        guard let form = type.activationForm else { return .nan }
        var weights = w
        var s: Double = 0
        if form == .q8_1 {
            for b in 0..<k / 32 {
                let m = fp16ToFloat(le16(w, b * type.blockBytes + 2))
                s += Double(m) * Double(fp16ToFloat(le16(a, b * 36 + 2)))
                weights[b * type.blockBytes + 2] = 0
                weights[b * type.blockBytes + 3] = 0
            }
        }
        guard let wv = dequantize(weights, type: type, count: k), let av = dequantize(a, type: form, count: k) else {
            return .nan
        }
        for i in 0..<k { s += Double(wv[i]) * Double(av[i]) }
        return Float(s)
    }

    // MARK: Blocks

    private static func blocks(
        _ bytes: [UInt8], type: GGMLType, count: Int, _ one: ([UInt8], GGMLType) -> [Float]
    ) -> [Float] {
        var out: [Float] = []
        out.reserveCapacity(count)
        for b in 0..<count / type.blockSize {
            let start = b * type.blockBytes
            out.append(contentsOf: one(Array(bytes[start..<start + type.blockBytes]), type))
        }
        return out
    }

    /// The 32-value types: d (and m), the fifth bits, the nibbles (element j low, j + 16 high).
    private static func small(_ b: [UInt8], _ type: GGMLType) -> [Float] {
        let d = fp16ToFloat(le16(b, 0))
        if type == .q8_0 || type == .q8_1 {
            let offset = type == .q8_0 ? 2 : 4
            return (0..<32).map { d * Float(Int8(bitPattern: b[offset + $0])) }
        }
        let hasMin = type == .q4_1 || type == .q5_1
        let m = hasMin ? fp16ToFloat(le16(b, 2)) : 0
        let five = type == .q5_0 || type == .q5_1
        let qh = five ? le32(b, hasMin ? 4 : 2) : 0
        let qs = (hasMin ? 4 : 2) + (five ? 4 : 0)
        var out = [Float](repeating: 0, count: 32)
        for j in 0..<16 {
            var x0 = Int(b[qs + j] & 0x0F)
            var x1 = Int(b[qs + j] >> 4)
            if five {
                x0 |= Int((qh >> UInt32(j)) & 1) << 4
                x1 |= Int((qh >> UInt32(j + 16)) & 1) << 4
            }
            if hasMin {
                out[j] = d * Float(x0) + m
                out[j + 16] = d * Float(x1) + m
            } else {
                let offset = five ? 16 : 8
                out[j] = d * Float(x0 - offset)
                out[j + 16] = d * Float(x1 - offset)
            }
        }
        return out
    }

    /// Q2_K: scales[16] qs[64] d dmin.
    private static func q2K(_ b: [UInt8], _: GGMLType) -> [Float] {
        let d = fp16ToFloat(le16(b, 80))
        let dmin = fp16ToFloat(le16(b, 82))
        var out: [Float] = []
        var scale = 0
        for n in 0..<2 {
            for shift in stride(from: 0, to: 8, by: 2) {
                for half in 0..<2 {
                    let sc = b[scale]
                    scale += 1
                    for l in 0..<16 {
                        let q = (b[16 + 32 * n + 16 * half + l] >> UInt8(shift)) & 3
                        out.append(d * Float(sc & 0x0F) * Float(q) - dmin * Float(sc >> 4))
                    }
                }
            }
        }
        return out
    }

    /// Q3_K: hmask[32] qs[64] scales[12] d.
    private static func q3K(_ b: [UInt8], _: GGMLType) -> [Float] {
        let d = fp16ToFloat(le16(b, 108))
        let packed = Array(b[96..<108])
        // 16 six-bit scales: low 4 bits from bytes 0-7 (low then high nibbles), 2 high bits from
        // bytes 8-11.
        let scales: [Int] = (0..<16).map { j in
            let low = j < 8 ? Int(packed[j] & 0x0F) : Int(packed[j - 8] >> 4)
            let high = Int(packed[8 + j % 4] >> UInt8(2 * (j / 4))) & 3
            return (low | high << 4) - 32
        }
        var out: [Float] = []
        var scale = 0
        var mask: UInt8 = 1
        for n in 0..<2 {
            for shift in stride(from: 0, to: 8, by: 2) {
                for half in 0..<2 {
                    let dl = d * Float(scales[scale])
                    scale += 1
                    for l in 0..<16 {
                        let i = 16 * half + l
                        let q = Int((b[32 + 32 * n + i] >> UInt8(shift)) & 3) - (b[i] & mask != 0 ? 0 : 4)
                        out.append(dl * Float(q))
                    }
                }
                mask <<= 1
            }
        }
        return out
    }

    /// Q4_K: d dmin scales[12] qs[128]; Q5_K adds qh[32] before qs.
    private static func q45K(_ b: [UInt8], _ type: GGMLType) -> [Float] {
        let d = fp16ToFloat(le16(b, 0))
        let dmin = fp16ToFloat(le16(b, 2))
        let s = Array(b[4..<16])
        func scaleMin(_ j: Int) -> (Int, Int) {
            if j < 4 { return (Int(s[j] & 63), Int(s[j + 4] & 63)) }
            return (Int(s[j + 4] & 0x0F) | Int(s[j - 4] >> 6) << 4, Int(s[j + 4] >> 4) | Int(s[j] >> 6) << 4)
        }
        let five = type == .q5_K
        let qs = five ? 48 : 16
        var out: [Float] = []
        for j in 0..<4 {
            for half in 0..<2 {
                let (sc, m) = scaleMin(2 * j + half)
                for l in 0..<32 {
                    let byte = b[qs + 32 * j + l]
                    var q = Int(half == 0 ? byte & 0x0F : byte >> 4)
                    if five, b[16 + l] & (1 << UInt8(2 * j + half)) != 0 { q += 16 }
                    out.append(d * Float(sc) * Float(q) - dmin * Float(m))
                }
            }
        }
        return out
    }

    /// Q6_K: ql[128] qh[64] scales[16] (int8) d.
    private static func q6K(_ b: [UInt8], _: GGMLType) -> [Float] {
        let d = fp16ToFloat(le16(b, 208))
        var out = [Float](repeating: 0, count: 256)
        for n in 0..<2 {
            for l in 0..<32 {
                let ql0 = b[64 * n + l]
                let ql1 = b[64 * n + l + 32]
                let qh = b[128 + 32 * n + l]
                let q = [
                    Int(ql0 & 0x0F) | Int(qh & 3) << 4, Int(ql1 & 0x0F) | Int((qh >> 2) & 3) << 4,
                    Int(ql0 >> 4) | Int((qh >> 4) & 3) << 4, Int(ql1 >> 4) | Int((qh >> 6) & 3) << 4,
                ]
                for part in 0..<4 {
                    let sc = Int8(bitPattern: b[192 + 8 * n + l / 16 + 2 * part])
                    out[128 * n + 32 * part + l] = d * Float(sc) * Float(q[part] - 32)
                }
            }
        }
        return out
    }

    /// MXFP4: e (E8M0) qs[16]; value = the doubled E2M1 value of the code times 2^(e − 128),
    /// the halved scale built from its bits as ggml_e8m0_to_fp32_half builds it (subnormal for
    /// e < 2; 255 is a plain power of two there, not NaN).
    private static func mxfp4(_ b: [UInt8], _: GGMLType) -> [Float] {
        let e = UInt32(b[0])
        let d = Float(bitPattern: e < 2 ? 0x0020_0000 << e : (e - 1) << 23)
        let table: [Int8] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12]
        var out = [Float](repeating: 0, count: 32)
        for j in 0..<16 {
            out[j] = Float(table[Int(b[1 + j] & 0x0F)]) * d
            out[j + 16] = Float(table[Int(b[1 + j] >> 4)]) * d
        }
        return out
    }

    // MARK: Bytes

    static func le16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }

    static func le32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(le16(bytes, at)) | UInt32(le16(bytes, at + 2)) << 16
    }
}
