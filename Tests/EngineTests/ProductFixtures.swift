import CKernels

@testable import Engine

/// What the llama.cpp product fixtures (`mxfp4-products.json`, `q4_0-products.json`) share: weight
/// bytes written as hex, and activation floats that the tests quantize to Q8_0 as the model does.
enum ProductFixtures {
    /// "0a1b…" as bytes.
    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }

    /// `n` rows of `k` activations quantized to Q8_0 (the vec_dot type of Q4_0 and MXFP4), and the
    /// bytes of one row.
    static func q8_0Rows(_ activations: [Float], k: Int, n: Int) -> (x: [UInt8], rowBytes: Int) {
        let rowBytes = GGMLType.q8_0.rowBytes(elements: k)!
        var x = [UInt8](repeating: 0, count: n * rowBytes)
        activations.withUnsafeBufferPointer { ab in
            x.withUnsafeMutableBytes { xb in
                let status = ck_rows_quantize(
                    nil, Int32(GGMLType.q8_0.rawValue), ab.baseAddress!, Int32(k), xb.baseAddress!, rowBytes, Int32(n))
                precondition(status == 0, "Q8_0 quantization failed")
            }
        }
        return (x, rowBytes)
    }
}
