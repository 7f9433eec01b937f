import CKernels
import Testing

@testable import Engine

/// What the llama.cpp product fixtures (`mxfp4-products.json`, `q4_0-products.json`,
/// `q2_k-products.json`) share: weight bytes written as hex, and activation floats that the tests
/// quantize to Q8_0 or Q8_K as the model does.
enum ProductFixtures {
    /// A case of the repacked-product fixtures (`q4_0-products.json`, `q2_k-products.json`).
    struct RepackedCase {
        let k: Int
        let rows: Int
        let n: Int
        let weights: [UInt8]
        let activations: [Float]
        let repacked: [UInt32]
        let plain: [UInt32]
    }

    /// The cases of such a fixture.
    static func loadRepacked(_ name: String) throws -> [RepackedCase] {
        let json = try TestFixtures.reference(name)
        var cases: [RepackedCase] = []
        for c in try #require(json["cases"] as? [[String: Any]]) {
            let weights = bytes(hex: try #require(c["weights"] as? String))
            cases.append(
                RepackedCase(
                    k: try #require(c["k"] as? Int), rows: try #require(c["rows"] as? Int),
                    n: try #require(c["n"] as? Int), weights: weights,
                    activations: try #require(c["activations"] as? [Double]).map { Float($0) },
                    repacked: try #require(c["repacked"] as? [String]).map { UInt32($0, radix: 16)! },
                    plain: try #require(c["plain"] as? [String]).map { UInt32($0, radix: 16)! }))
        }
        return cases
    }

    /// How many of `y` (token-major, `rows` per token) differ from llama.cpp's bits, and the first.
    static func differing(_ y: [Float], _ theirs: [UInt32], rows: Int, n: Int) -> (Int, String) {
        var count = 0
        var first = ""
        for t in 0..<n {
            for r in 0..<rows where y[t * rows + r].bitPattern != theirs[r + t * rows] {
                count += 1
                if first.isEmpty {
                    first = "token \(t) row \(r): \(y[t * rows + r]) vs \(Float(bitPattern: theirs[r + t * rows]))"
                }
            }
        }
        return (count, first)
    }

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
