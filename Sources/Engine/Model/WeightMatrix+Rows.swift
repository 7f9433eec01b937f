extension WeightMatrix {
    /// Rows `range` of this matrix as a matrix of their own: rows are contiguous in every GGUF
    /// type, so a view is the first row's offset and a row count (Phi-3's fused Q/K/V and
    /// gate/up). Products read only the view's rows; an interleaved copy is made per view.
    func rows(_ range: Range<Int>, name: String) -> WeightMatrix {
        precondition(range.lowerBound >= 0 && range.upperBound <= rows, "rows \(range) outside 0..<\(rows)")
        return WeightMatrix(
            name: name, type: type, columns: columns, rows: range.count, data: data + range.lowerBound * rowBytes,
            rowBytes: rowBytes)
    }
}
