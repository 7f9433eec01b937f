import Foundation

/// Plain, obviously-correct Swift versions of every fast kernel in CKernels. They define what the
/// fast kernels must compute; tests compare the two on random data. Slow on purpose: no SIMD, no
/// tricks, allocation allowed.
enum ReferenceKernels {
    static let blockSize = 32

    // MARK: fp16

    static func fp16ToFloat(_ h: UInt16) -> Float { Float(Float16(bitPattern: h)) }
    static func floatToFP16(_ f: Float) -> UInt16 { Float16(f).bitPattern }
    static func roundToFP16(_ f: Float) -> Float { Float(Float16(f)) }

    // MARK: Activation quantization (ggml block layouts, little-endian bytes)

    /// One block: amax, d = amax / 127, q = round-to-nearest-even(x * 127 / amax).
    static func quantizeBlock(_ x: ArraySlice<Float>) -> (d: Float, q: [Int8]) {
        let amax = x.map { abs($0) }.max() ?? 0
        let d = amax / 127
        let id: Float = amax != 0 ? 127 / amax : 0
        let q = x.map { Int8(($0 * id).rounded(.toNearestOrEven)) }
        return (d, q)
    }

    /// Q8_1: per block fp16 d, fp16 s = d * sum(q), 32 int8.
    static func quantizeQ8_1(_ x: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        for b in stride(from: 0, to: x.count, by: blockSize) {
            let (d, q) = quantizeBlock(x[b..<b + blockSize])
            let sum = q.reduce(0) { $0 + Int($1) }
            append16(&out, floatToFP16(d))
            append16(&out, floatToFP16(d * Float(sum)))
            out.append(contentsOf: q.map { UInt8(bitPattern: $0) })
        }
        return out
    }

    /// Q8_0: per block fp16 d, 32 int8.
    static func quantizeQ8_0(_ x: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        for b in stride(from: 0, to: x.count, by: blockSize) {
            let (d, q) = quantizeBlock(x[b..<b + blockSize])
            append16(&out, floatToFP16(d))
            out.append(contentsOf: q.map { UInt8(bitPattern: $0) })
        }
        return out
    }

    // MARK: Weight quantization (to build test tensors) and dequantization

    /// Q4_1 of 32 values: d = (max - min) / 15, m = min, q = round((x - min) / d) clamped to 0...15.
    static func quantizeQ4_1(_ x: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        for b in stride(from: 0, to: x.count, by: blockSize) {
            let block = Array(x[b..<b + blockSize])
            let lo = block.min()!
            let hi = block.max()!
            let d = (hi - lo) / 15
            let id: Float = d != 0 ? 1 / d : 0
            append16(&out, floatToFP16(d))
            append16(&out, floatToFP16(lo))
            let q = block.map { UInt8(min(15, max(0, (($0 - lo) * id).rounded()))) }
            for j in 0..<16 { out.append(q[j] | (q[j + 16] << 4)) }
        }
        return out
    }

    static func dequantizeQ4_1(_ bytes: [UInt8], count: Int) -> [Float] {
        var out: [Float] = []
        for b in 0..<count / blockSize {
            let base = b * 20
            let d = fp16ToFloat(read16(bytes, base))
            let m = fp16ToFloat(read16(bytes, base + 2))
            var values = [Float](repeating: 0, count: blockSize)
            for j in 0..<16 {
                let byte = bytes[base + 4 + j]
                values[j] = d * Float(byte & 0x0F) + m
                values[j + 16] = d * Float(byte >> 4) + m
            }
            out.append(contentsOf: values)
        }
        return out
    }

    static func dequantizeQ8_0(_ bytes: [UInt8], count: Int) -> [Float] {
        var out: [Float] = []
        for b in 0..<count / blockSize {
            let base = b * 34
            let d = fp16ToFloat(read16(bytes, base))
            for j in 0..<blockSize { out.append(d * Float(Int8(bitPattern: bytes[base + 2 + j]))) }
        }
        return out
    }

    static func dequantizeF16(_ bytes: [UInt8], count: Int) -> [Float] {
        (0..<count).map { fp16ToFloat(read16(bytes, 2 * $0)) }
    }

    // MARK: Dot products

    /// Σ_blocks fp16(d_w)·fp16(d_a)·Σ(q_w·q_a) + fp16(m_w)·fp16(s_a), from the byte layouts.
    static func dotQ4_1Q8_1(_ w: [UInt8], _ a: [UInt8], k: Int) -> Float {
        var sum: Double = 0
        for b in 0..<k / blockSize {
            let wb = b * 20
            let ab = b * 36
            var isum = 0
            for j in 0..<16 {
                let byte = w[wb + 4 + j]
                isum += Int(byte & 0x0F) * Int(Int8(bitPattern: a[ab + 4 + j]))
                isum += Int(byte >> 4) * Int(Int8(bitPattern: a[ab + 4 + j + 16]))
            }
            let dw = Double(fp16ToFloat(read16(w, wb)))
            let mw = Double(fp16ToFloat(read16(w, wb + 2)))
            let da = Double(fp16ToFloat(read16(a, ab)))
            let sa = Double(fp16ToFloat(read16(a, ab + 2)))
            sum += dw * da * Double(isum) + mw * sa
        }
        return Float(sum)
    }

    static func dotQ8_0Q8_0(_ w: [UInt8], _ a: [UInt8], k: Int) -> Float {
        var sum: Double = 0
        for b in 0..<k / blockSize {
            let base = b * 34
            var isum = 0
            for j in 0..<blockSize {
                isum += Int(Int8(bitPattern: w[base + 2 + j])) * Int(Int8(bitPattern: a[base + 2 + j]))
            }
            sum += Double(fp16ToFloat(read16(w, base))) * Double(fp16ToFloat(read16(a, base))) * Double(isum)
        }
        return Float(sum)
    }

    static func dot(_ a: [Float], _ b: [Float]) -> Float {
        var s: Double = 0
        for i in a.indices { s += Double(a[i]) * Double(b[i]) }
        return Float(s)
    }

    // MARK: Element-wise

    static func rmsNorm(_ x: [Float], weight: [Float], eps: Float) -> [Float] {
        var ss: Double = 0
        for v in x { ss += Double(v) * Double(v) }
        let scale = 1 / (ss / Double(x.count) + Double(eps)).squareRoot()
        return x.indices.map { Float(Double(x[$0]) * scale) * weight[$0] }
    }

    /// Adjacent pairs (x[2i], x[2i+1]) of each head rotated by pos · base^(-2i/nRot).
    static func rope(_ x: [Float], heads: Int, headDim: Int, nRot: Int, pos: Int, base: Float) -> [Float] {
        var y = x
        for h in 0..<heads {
            for i in stride(from: 0, to: nRot, by: 2) {
                let theta = Double(pos) * pow(Double(base), -Double(i) / Double(nRot))
                let c = cos(theta)
                let s = sin(theta)
                let x0 = Double(x[h * headDim + i])
                let x1 = Double(x[h * headDim + i + 1])
                y[h * headDim + i] = Float(x0 * c - x1 * s)
                y[h * headDim + i + 1] = Float(x0 * s + x1 * c)
            }
        }
        return y
    }

    static func softmax(_ x: [Float]) -> [Float] {
        let m = x.max() ?? 0
        let e = x.map { exp(Double($0 - m)) }
        let s = e.reduce(0, +)
        return e.map { Float($0 / s) }
    }

    static func silu(_ x: Float) -> Float { Float(Double(x) / (1 + exp(-Double(x)))) }

    /// One query head over keys/values (already f16-rounded as stored in the cache): the query is
    /// rounded to f16, scores scaled, softmax, weights rounded to f16 when `roundWeights` (single
    /// token decode, as llama.cpp), weighted sum of values.
    static func attention(
        query: [Float], keys: [[Float]], values: [[Float]], scale: Float, roundWeights: Bool = true
    ) -> [Float] {
        let q = query.map(roundToFP16)
        let scores = keys.map { dot(q, $0) * scale }
        let p = roundWeights ? softmax(scores).map(roundToFP16) : softmax(scores)
        var out = [Float](repeating: 0, count: query.count)
        for (j, v) in values.enumerated() {
            for d in out.indices { out[d] += p[j] * v[d] }
        }
        return out
    }

    // MARK: Bytes

    private static func append16(_ out: inout [UInt8], _ v: UInt16) {
        out.append(UInt8(v & 0xFF))
        out.append(UInt8(v >> 8))
    }

    private static func read16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        UInt16(bytes[at]) | (UInt16(bytes[at + 1]) << 8)
    }
}
