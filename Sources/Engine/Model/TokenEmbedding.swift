import CKernels

/// The token embedding table, `[vocabulary × dim]` in the file's storage type, read one row per
/// token with `pread` rather than through the file's mapping.
///
/// A first touch of a file mapping maps whole page-cache folios around the page touched (a
/// test touching 10 rows 3 MB apart mapped 1,216 KiB), so reading embedding rows through the
/// mapping left 3.8 MiB of the table resident after one batch of 8 short prompts, and a
/// server's RSS would grow towards the whole table (30.1 MB of Q8_0 for the default model) as its
/// prompts use more of the vocabulary. A row is a few hundred bytes: one `pread` per token
/// costs about a microsecond, against milliseconds for the token's pass.
///
/// One row is read at a time, into a buffer made once (decode allocates nothing): used by one
/// forward pass at a time, under the model's lock.
final class TokenEmbedding: @unchecked Sendable {
    let matrix: WeightMatrix
    let file: GGUFMapping
    /// Where row 0 starts in the file.
    private let offset: Int
    /// One row in the file's storage type.
    private let row: UnsafeMutableRawBufferPointer

    init(matrix: WeightMatrix, file: GGUFMapping) {
        self.matrix = matrix
        self.file = file
        offset = matrix.data - file.bytes.baseAddress!
        row = .allocate(byteCount: matrix.rowBytes, alignment: 64)
    }

    deinit { row.deallocate() }

    /// Writes row `row` (a token id below the vocabulary size) as f32 into `out` (`dim` floats).
    func dequantizeRow(_ row: Int, into out: UnsafeMutablePointer<Float>) {
        file.read(self.row, at: offset + row * matrix.rowBytes)
        ck_dequantize_row(matrix.kernelType, self.row.baseAddress!, out, Int32(matrix.columns))
    }
}
