import CKernels
import Foundation

/// Copies a model's quantized matrices into the interleaved forms (see CKernels/interleave.c)
/// once at load time, then gives the file pages it read back to the kernel so the copy does
/// not double the resident memory while the model loads: the mapping stays valid and faults pages
/// in again only where they are read (a matrix without an interleaved form).
enum WeightInterleaver {
    /// `INFERD_INTERLEAVE=0` keeps the file layout (to compare speeds without rebuilding).
    static var enabledByEnvironment: Bool { ProcessInfo.processInfo.environment["INFERD_INTERLEAVE"] != "0" }

    /// Interleaves every matrix that has a form; returns the buffer holding them (owned by the
    /// caller), or nil when none has one.
    static func interleave(
        layers: inout [LlamaModel.Layer], output: inout WeightMatrix
    ) -> UnsafeMutableRawBufferPointer? {
        var total = output.interleavedByteCount
        for layer in layers {
            for matrix in layer.matrices { total += matrix.interleavedByteCount }
        }
        guard total > 0 else { return nil }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: total, alignment: 64)
        var offset = 0
        func place(_ matrix: inout WeightMatrix) {
            let bytes = matrix.interleavedByteCount
            guard bytes > 0 else { return }
            matrix.interleave(into: buffer.baseAddress! + offset)
            offset += bytes
            release(matrix.data, byteCount: matrix.rows * matrix.rowBytes)
        }
        for i in layers.indices {
            layers[i].updateMatrices { place(&$0) }
        }
        place(&output)
        return buffer
    }

    /// Drops the whole pages inside `[start, start + byteCount)` of the read-only file mapping.
    private static func release(_ start: UnsafeRawPointer, byteCount: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let first = (Int(bitPattern: start) + page - 1) / page * page
        let end = (Int(bitPattern: start) + byteCount) / page * page
        guard end > first, let address = UnsafeMutableRawPointer(bitPattern: first) else { return }
        _ = madvise(address, end - first, MADV_DONTNEED)
    }
}
