import CKernels

/// The form activations take for a product with weights of each type: ggml's `vec_dot_type`,
/// so the integer dot products and their roundings are llama.cpp's.
extension GGMLType {
    /// Q8_0 for Q4_0, Q5_0, Q8_0 and MXFP4; Q8_1 for Q4_1 and Q5_1; Q8_K for Q2_K...Q6_K; f32 for the
    /// float types (F32, F16, BF16). nil for types matrix products do not take.
    var activationForm: GGMLType? {
        switch self {
        case .q4_0, .q5_0, .q8_0, .mxfp4: .q8_0
        case .q4_1, .q5_1: .q8_1
        case .q2_K, .q3_K, .q4_K, .q5_K, .q6_K: .q8_K
        case .f32, .f16, .bf16: .f32
        case .q8_1, .q8_K, .i8, .i16, .i32, .i64, .f64: nil
        }
    }

    /// F16 and BF16: their products read f32 activations rounded to f16 / bf16 first (llama.cpp
    /// converts them to its vec_dot_type of that type), kept as f32 (`ck_rows_quantize`).
    var roundsActivations: Bool { self == .f16 || self == .bf16 }

    /// The form a product with these weights reads its activations in: the quantized
    /// `activationForm`, the type itself for F16 and BF16 (f32 rounded to it), or f32.
    var productInputForm: GGMLType { roundsActivations ? self : activationForm ?? .f32 }

    /// Quantizes one row of `count` floats into this (activation) form: Q8_0, Q8_1 or Q8_K.
    func quantizeActivations(_ x: UnsafePointer<Float>, into out: UnsafeMutableRawPointer, count: Int) {
        switch self {
        case .q8_1: ck_quantize_row_q8_1(x, out.assumingMemoryBound(to: ck_block_q8_1.self), Int32(count))
        case .q8_0: ck_quantize_row_q8_0(x, out.assumingMemoryBound(to: ck_block_q8_0.self), Int32(count))
        case .q8_K: ck_quantize_row_q8_K(x, out.assumingMemoryBound(to: ck_block_q8_K.self), Int32(count))
        default: preconditionFailure("\(self) is not an activation form")
        }
    }

    /// Bytes enough for one row of `columns` activations in any quantized form (Q8_0: 34, Q8_1:
    /// 36 per 32 values; Q8_K: 292 per 256), rounded up a block, or as f32 rounded to f16 or bf16
    /// (the activations of F16 and BF16 weights, 4 bytes a value; pages no product touches stay unresident).
    static func activationScratchBytes(columns: Int) -> Int {
        max(
            (columns / 32 + 1) * MemoryLayout<ck_block_q8_1>.stride,
            (columns / 256 + 1) * MemoryLayout<ck_block_q8_K>.stride,
            columns * MemoryLayout<Float>.stride)
    }
}
