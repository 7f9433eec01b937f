/// Tensor element types as numbered by ggml. The reader knows the storage size of every
/// type it may meet so it can bounds-check tensors it cannot compute with; which types the
/// model can compute with is the model's decision, not the reader's.
public enum GGMLType: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    case f32 = 0
    case f16 = 1
    case q4_0 = 2
    case q4_1 = 3
    case q5_0 = 6
    case q5_1 = 7
    case q8_0 = 8
    case q8_1 = 9
    case q2_K = 10
    case q3_K = 11
    case q4_K = 12
    case q5_K = 13
    case q6_K = 14
    case q8_K = 15
    case i8 = 24
    case i16 = 25
    case i32 = 26
    case i64 = 27
    case f64 = 28
    case bf16 = 30
    /// 32 four-bit E2M1 codes with one E8M0 scale byte (gpt-oss's experts).
    case mxfp4 = 39

    /// Elements per block.
    public var blockSize: Int {
        switch self {
        case .f32, .f16, .i8, .i16, .i32, .i64, .f64, .bf16: 1
        case .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q8_1, .mxfp4: 32
        case .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .q8_K: 256
        }
    }

    /// Bytes per block.
    public var blockBytes: Int {
        switch self {
        case .f32, .i32: 4
        case .f16, .bf16, .i16: 2
        case .i8: 1
        case .i64, .f64: 8
        case .q4_0: 18
        case .q4_1: 20
        case .q5_0: 22
        case .q5_1: 24
        case .q8_0: 34
        case .q8_1: 36
        case .q2_K: 84
        case .q3_K: 110
        case .q4_K: 144
        case .q5_K: 176
        case .q6_K: 210
        case .q8_K: 292
        case .mxfp4: 17
        }
    }

    public var description: String {
        switch self {
        case .f32: "F32"
        case .f16: "F16"
        case .bf16: "BF16"
        case .q4_0: "Q4_0"
        case .q4_1: "Q4_1"
        case .q5_0: "Q5_0"
        case .q5_1: "Q5_1"
        case .q8_0: "Q8_0"
        case .q8_1: "Q8_1"
        case .q2_K: "Q2_K"
        case .q3_K: "Q3_K"
        case .q4_K: "Q4_K"
        case .q5_K: "Q5_K"
        case .q6_K: "Q6_K"
        case .q8_K: "Q8_K"
        case .i8: "I8"
        case .i16: "I16"
        case .i32: "I32"
        case .i64: "I64"
        case .f64: "F64"
        case .mxfp4: "MXFP4"
        }
    }

    /// Bytes needed for one row of `elements` values, or nil when the row does not fill whole blocks.
    public func rowBytes(elements: Int) -> Int? {
        guard elements % blockSize == 0 else { return nil }
        return elements / blockSize * blockBytes
    }
}
