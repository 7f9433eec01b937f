import CKernels

@testable import Engine

/// What the llama.cpp product fixtures (`mxfp4-products.json`, `q4_0-products.json`,
/// `q2_k-products.json`) share: weight bytes written as hex, and activation floats that the tests
/// quantize to Q8_0 or Q8_K as the model does.
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
        rows(activations, k: k, n: n, form: .q8_0)
    }

    /// ... quantized to Q8_K (the vec_dot type of the K-quants).
    static func q8_KRows(_ activations: [Float], k: Int, n: Int) -> (x: [UInt8], rowBytes: Int) {
        rows(activations, k: k, n: n, form: .q8_K)
    }

    /// `rows` rows of `type` weights in their interleaved form: the bytes, the form's type and the
    /// bytes of one group of eight rows.
    static func interleaved(_ type: GGMLType, _ weights: [UInt8], rows: Int, k: Int) -> (
        packed: [UInt8], type: Int32, groupBytes: Int
    ) {
        let groupBytes = ck_interleaved_group_bytes(Int32(type.rawValue), Int32(k))
        var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
        let packedType = weights.withUnsafeBytes { src in
            packed.withUnsafeMutableBytes { dst in
                ck_interleave(
                    Int32(type.rawValue), src.baseAddress!, type.rowBytes(elements: k)!, Int32(rows), Int32(k),
                    dst.baseAddress!)
            }
        }
        return (packed, packedType, groupBytes)
    }

    private static func rows(_ activations: [Float], k: Int, n: Int, form: GGMLType) -> (x: [UInt8], rowBytes: Int) {
        let rowBytes = form.rowBytes(elements: k)!
        var x = [UInt8](repeating: 0, count: n * rowBytes)
        activations.withUnsafeBufferPointer { ab in
            x.withUnsafeMutableBytes { xb in
                let status = ck_rows_quantize(
                    nil, Int32(form.rawValue), ab.baseAddress!, Int32(k), xb.baseAddress!, rowBytes, Int32(n))
                precondition(status == 0, "\(form) quantization failed")
            }
        }
        return (x, rowBytes)
    }
}
