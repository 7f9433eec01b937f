import CKernels

/// A 2-D weight tensor `[rows × columns]` read in place from the mapped GGUF file: row r
/// (one output feature) is `columns` contiguous values in the tensor's storage type.
/// Matrix products may read a copy in anonymous memory instead (see `writeCopy(into:)`).
struct WeightMatrix {
    static let supportedTypes: Set<GGMLType> = [
        .f32, .f16, .bf16, .q8_0, .q4_0, .q4_1, .q5_0, .q5_1, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .mxfp4,
    ]

    let name: String
    let type: GGMLType
    let columns: Int
    let rows: Int
    let data: UnsafeRawPointer
    let rowBytes: Int
    /// What matrix products read: the file's rows (`rowBytes` apart), their verbatim copy, or an
    /// interleaved copy (`ck_interleaved_group_bytes` per group of eight rows).
    private(set) var productType: Int32
    private(set) var productData: UnsafeRawPointer
    private(set) var productStride: Int

    /// Validates presence, shape (ggml order `[columns, rows]`) and type.
    init(gguf: GGUFFile, name: String, columns: Int, rows: Int) throws(ModelError) {
        guard let info = gguf.tensors[name] else { throw .missingTensor(name) }
        guard info.shape == [columns, rows] else {
            throw .wrongShape(tensor: name, expected: [columns, rows], actual: info.shape)
        }
        guard Self.supportedTypes.contains(info.type) else {
            throw .unsupportedTensorType(tensor: name, type: info.type)
        }
        guard let rowBytes = info.type.rowBytes(elements: columns) else {
            throw .wrongShape(tensor: name, expected: [columns, rows], actual: info.shape)
        }
        let bytes: UnsafeRawBufferPointer
        do { bytes = try gguf.tensorData(name) } catch { throw .missingTensor(name) }
        guard bytes.count >= rowBytes * rows, let base = bytes.baseAddress else {
            throw .wrongShape(tensor: name, expected: [columns, rows], actual: info.shape)
        }
        self.name = name
        self.type = info.type
        self.columns = columns
        self.rows = rows
        self.data = base
        self.rowBytes = rowBytes
        self.productType = Int32(info.type.rawValue)
        self.productData = base
        self.productStride = rowBytes
    }

    /// A view on rows already validated elsewhere (tests and benchmarks).
    init(name: String, type: GGMLType, columns: Int, rows: Int, data: UnsafeRawPointer, rowBytes: Int) {
        self.name = name
        self.type = type
        self.columns = columns
        self.rows = rows
        self.data = data
        self.rowBytes = rowBytes
        self.productType = Int32(type.rawValue)
        self.productData = data
        self.productStride = rowBytes
    }

    var kernelType: Int32 { Int32(type.rawValue) }

    /// Whether products read a copy (`readCopy(at:as:)`) rather than the file's rows.
    var isCopied: Bool { productData != data }

    /// Bytes of an interleaved copy of this matrix, or 0 when it has no interleaved form (the
    /// CPU lacks the kernels that make it pay, or the type or shape does not allow one).
    var interleavedByteCount: Int {
        guard ck_interleaving_pays(kernelType) != 0, rows % 8 == 0 else { return 0 }
        return rows / 8 * ck_interleaved_group_bytes(kernelType, Int32(columns))
    }

    /// Bytes `writeCopy(into:)` writes: the interleaved form, else the rows as the file has them.
    var copyByteCount: Int {
        let interleaved = interleavedByteCount
        return interleaved > 0 ? interleaved : rows * rowBytes
    }

    /// Writes this matrix's copy into `destination` (`copyByteCount` bytes): its interleaved
    /// form where it has one, else its rows verbatim. Returns the type products read the copy
    /// as, for `readCopy(at:as:)`. Touches nothing but `destination`, so matrices may be
    /// written on several threads at once.
    func writeCopy(into destination: UnsafeMutableRawPointer) -> Int32 {
        if interleavedByteCount > 0 {
            let type = ck_interleave(kernelType, data, rowBytes, Int32(rows), Int32(columns), destination)
            if type >= 0 { return type }
        }
        destination.copyMemory(from: data, byteCount: rows * rowBytes)
        return kernelType
    }

    /// Points products at the copy `writeCopy` wrote at `destination` (kept alive by the
    /// caller), read as `type`.
    mutating func readCopy(at destination: UnsafeRawPointer, as type: Int32) {
        productType = type
        productData = destination
        productStride = type == kernelType ? rowBytes : ck_interleaved_group_bytes(kernelType, Int32(columns))
    }

    /// Writes row `row` as f32 into `out` (`columns` floats).
    func dequantizeRow(_ row: Int, into out: UnsafeMutablePointer<Float>) {
        ck_dequantize_row(kernelType, data + row * rowBytes, out, Int32(columns))
    }
}

/// A 1-D f32 vector (norm weights), copied out of the file at load time.
enum VectorLoader {
    /// All `count` values of a float tensor of any shape, in storage order (biases stored 2-D).
    static func loadFlat(gguf: GGUFFile, name: String, count: Int) throws(ModelError) -> [Float] {
        guard let info = gguf.tensors[name] else { throw .missingTensor(name) }
        guard info.shape.reduce(1, *) == count else {
            throw .wrongShape(tensor: name, expected: [count], actual: info.shape)
        }
        guard info.type == .f32 || info.type == .f16 || info.type == .bf16 else {
            throw .unsupportedTensorType(tensor: name, type: info.type)
        }
        let bytes: UnsafeRawBufferPointer
        do { bytes = try gguf.tensorData(name) } catch { throw .missingTensor(name) }
        var out = [Float](repeating: 0, count: count)
        out.withUnsafeMutableBufferPointer { dst in
            ck_dequantize_row(Int32(info.type.rawValue), bytes.baseAddress!, dst.baseAddress!, Int32(count))
        }
        return out
    }

    static func load(gguf: GGUFFile, name: String, count: Int) throws(ModelError) -> [Float] {
        guard let info = gguf.tensors[name] else { throw .missingTensor(name) }
        guard info.shape == [count] else { throw .wrongShape(tensor: name, expected: [count], actual: info.shape) }
        guard info.type == .f32 || info.type == .f16 || info.type == .bf16 else {
            throw .unsupportedTensorType(tensor: name, type: info.type)
        }
        let bytes: UnsafeRawBufferPointer
        do { bytes = try gguf.tensorData(name) } catch { throw .missingTensor(name) }
        var out = [Float](repeating: 0, count: count)
        out.withUnsafeMutableBufferPointer { dst in
            ck_dequantize_row(Int32(info.type.rawValue), bytes.baseAddress!, dst.baseAddress!, Int32(count))
        }
        return out
    }
}
