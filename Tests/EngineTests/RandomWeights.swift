import Foundation

@testable import Engine

/// Random weight rows of any type the engine computes with: random quant bytes with their fp16
/// scale fields set so values have about the wanted size (as PyPI gguf cannot quantize the
/// K-quants, and random bytes reach every bit pattern a quantizer would).
enum RandomWeights {
    /// Byte offsets of a block's multiplier scales (d, dmin) and of its additive min (m).
    static func scaleFields(_ type: GGMLType) -> (scales: [Int], min: Int?) {
        switch type {
        case .q4_0, .q5_0, .q8_0: ([0], nil)
        case .q4_1, .q5_1: ([0], 2)
        case .q2_K: ([80, 82], nil)
        case .q3_K: ([108], nil)
        case .q4_K, .q5_K: ([0, 2], nil)
        case .q6_K: ([208], nil)
        default: ([], nil)
        }
    }

    /// `rows` rows of `columns` values of `type`, values of roughly `scale` in size.
    static func matrix(_ type: GGMLType, rows: Int, columns: Int, scale: Float, rng: inout SeededRandom) -> [UInt8] {
        var out: [UInt8] = []
        for _ in 0..<rows { out += row(type, columns: columns, scale: scale, rng: &rng) }
        return out
    }

    static func row(_ type: GGMLType, columns: Int, scale: Float, rng: inout SeededRandom) -> [UInt8] {
        switch type {
        case .f32:
            return rng.floats(columns, scale).flatMap { v in withUnsafeBytes(of: v.bitPattern.littleEndian, Array.init)
            }
        case .f16:
            return rng.floats(columns, scale).flatMap { v in
                withUnsafeBytes(of: ReferenceKernels.floatToFP16(v).littleEndian, Array.init)
            }
        case .bf16:
            return rng.floats(columns, scale).flatMap { v in
                withUnsafeBytes(of: UInt16(v.bitPattern >> 16).littleEndian, Array.init)
            }
        case .mxfp4:
            // Random codes; each block's E8M0 scale near the one giving values of `scale` (the
            // codes' RMS is about 6), give or take a factor 2.
            var bytes = (0..<type.rowBytes(elements: columns)!).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let e = 128 + Int((log2(Double(scale) / 6)).rounded())
            for b in 0..<columns / 32 { bytes[b * 17] = UInt8(e + Int(rng.next() % 3) - 1) }
            return bytes
        default: break
        }
        let (scales, minField) = scaleFields(type)
        var bytes = (0..<type.rowBytes(elements: columns)!).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        if type == .q8_0 {  // ggml's quantizers never write -128
            for b in 0..<columns / 32 {
                for j in 0..<32 where bytes[b * 34 + 2 + j] == 0x80 { bytes[b * 34 + 2 + j] = 0x81 }
            }
        }
        // Unit scales first, to measure the size of the values they give.
        let blocks = columns / type.blockSize
        func setScales(_ d: Float, block: Int) {
            let base = block * type.blockBytes
            for field in scales { put16(&bytes, base + field, ReferenceKernels.floatToFP16(d)) }
            if let m = minField {
                put16(&bytes, base + m, ReferenceKernels.floatToFP16(-d * (type == .q4_1 ? 8 : 16)))
            }
        }
        for b in 0..<blocks { setScales(1, block: b) }
        let unit = ReferenceKernels.dequantize(bytes, type: type, count: columns)!
        let rms = (unit.reduce(0) { $0 + Double($1) * Double($1) } / Double(columns)).squareRoot()
        for b in 0..<blocks { setScales(scale / Float(max(rms, 1e-3)) * (1 + 0.5 * rng.float()), block: b) }
        return bytes
    }

    private static func put16(_ bytes: inout [UInt8], _ at: Int, _ v: UInt16) {
        bytes[at] = UInt8(v & 0xFF)
        bytes[at + 1] = UInt8(v >> 8)
    }
}
