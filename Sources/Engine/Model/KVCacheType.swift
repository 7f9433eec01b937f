/// How a KV cache stores keys and values (the `kv_cache_type` setting).
public enum KVCacheType: String, Sendable, CaseIterable, CustomStringConvertible {
    /// f16, as llama.cpp stores them by default: the answers of the reference checks.
    case f16
    /// q8_0 blocks (32 int8 and an f16 scale): 34 bytes per 32 values, 53 % of f16's memory,
    /// read as attention_q8.c describes. Needs a head size that is a multiple of 32.
    case q8_0

    public var description: String { rawValue }

    /// Bytes one position of one layer's keys (or values) takes for `kvDim` values.
    func bytesPerPosition(kvDim: Int) -> Int {
        switch self {
        case .f16: kvDim * 2
        case .q8_0: kvDim / 32 * 34
        }
    }
}
