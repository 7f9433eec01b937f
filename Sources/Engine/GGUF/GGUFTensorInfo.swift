/// Where one tensor lives in a GGUF file and how it is stored.
public struct GGUFTensorInfo: Sendable, Equatable {
    public let name: String
    /// ggml order: `shape[0]` is the contiguous row length, `shape[1]` the number of rows.
    public let shape: [Int]
    public let type: GGMLType
    /// Absolute byte offset of the tensor's data in the file.
    public let offset: Int
    public let byteCount: Int

    public var elementCount: Int { shape.reduce(1, *) }
}
