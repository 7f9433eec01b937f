import CKernels

/// A 2-D weight tensor `[rows × columns]` read in place from the mapped GGUF file: row r
/// (one output feature) is `columns` contiguous values in the tensor's storage type.
struct WeightMatrix {
    static let supportedTypes: Set<GGMLType> = [.f32, .f16, .q4_1, .q8_0]

    let name: String
    let type: GGMLType
    let columns: Int
    let rows: Int
    let data: UnsafeRawPointer
    let rowBytes: Int

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
    }

    /// A view on rows already validated elsewhere (tests and benchmarks).
    init(name: String, type: GGMLType, columns: Int, rows: Int, data: UnsafeRawPointer, rowBytes: Int) {
        self.name = name
        self.type = type
        self.columns = columns
        self.rows = rows
        self.data = data
        self.rowBytes = rowBytes
    }

    var kernelType: Int32 { Int32(type.rawValue) }

    /// Writes row `row` as f32 into `out` (`columns` floats).
    func dequantizeRow(_ row: Int, into out: UnsafeMutablePointer<Float>) {
        ck_dequantize_row(kernelType, data + row * rowBytes, out, Int32(columns))
    }
}

/// A 1-D f32 vector (norm weights), copied out of the file at load time.
enum VectorLoader {
    static func load(gguf: GGUFFile, name: String, count: Int) throws(ModelError) -> [Float] {
        guard let info = gguf.tensors[name] else { throw .missingTensor(name) }
        guard info.shape == [count] else { throw .wrongShape(tensor: name, expected: [count], actual: info.shape) }
        guard info.type == .f32 || info.type == .f16 else {
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
