/// What a loaded model's weights take in memory: the copies made at load time
/// (anonymous memory, resident for the model's life) and the matrices products read in place
/// from the file mapping (page cache, which the kernel may drop and read again).
public struct WeightResidency: Sendable, Equatable {
    /// Which matrices were copied, into their interleaved forms or verbatim (`WeightCopier`).
    public enum Copies: String, Sendable {
        /// Every matrix.
        case all
        /// All but the experts' matrices, which stay in the file layout: copying them too would
        /// have passed half the physical memory.
        case allButExperts = "all_but_experts"
        /// None: copying is off, or even the matrices besides the experts would have passed
        /// half the physical memory.
        case none
    }

    public let copies: Copies
    /// Bytes of every weight matrix in the file (`LlamaModel.weightBytes`).
    public let totalBytes: Int
    /// Bytes of the copies (anonymous memory).
    public let copiedBytes: Int
    /// Bytes of the file's matrices products read in place: the token embedding (its rows are
    /// always read from the file, even when a tied output head has a copy) and every matrix
    /// without a copy.
    public let mappedBytes: Int
    /// Bytes one decoding token's pass reads (`LlamaModel.activeWeightBytesPerToken`).
    public let activeBytesPerToken: Int
}
