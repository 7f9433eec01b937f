extension WeightMatrix {
    /// The `count` 2-D matrices [rows × columns] of a 3-D tensor (GGUF shape [columns, rows,
    /// count]: expert e's rows follow expert e − 1's), as views in place in the mapped file.
    static func experts(
        gguf: GGUFFile, name: String, columns: Int, rows: Int, count: Int
    ) throws(ModelError) -> [WeightMatrix] {
        guard let info = gguf.tensors[name] else { throw .missingTensor(name) }
        guard info.shape == [columns, rows, count] else {
            throw .wrongShape(tensor: name, expected: [columns, rows, count], actual: info.shape)
        }
        guard supportedTypes.contains(info.type) else {
            throw .unsupportedTensorType(tensor: name, type: info.type)
        }
        guard let rowBytes = info.type.rowBytes(elements: columns) else {
            throw .wrongShape(tensor: name, expected: [columns, rows, count], actual: info.shape)
        }
        let bytes: UnsafeRawBufferPointer
        do { bytes = try gguf.tensorData(name) } catch { throw .missingTensor(name) }
        guard bytes.count >= rowBytes * rows * count, let base = bytes.baseAddress else {
            throw .wrongShape(tensor: name, expected: [columns, rows, count], actual: info.shape)
        }
        return (0..<count).map { e in
            WeightMatrix(
                name: "\(name)[\(e)]", type: info.type, columns: columns, rows: rows, data: base + e * rows * rowBytes,
                rowBytes: rowBytes)
        }
    }

    /// Bytes of this matrix in the file (its rows as stored, whatever form products read).
    var fileBytes: Int { rows * rowBytes }
}
