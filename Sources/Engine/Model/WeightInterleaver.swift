import CKernels
import Foundation

/// Copies a model's quantized matrices into the interleaved forms (see CKernels/interleave.c)
/// once at load time, then gives the file pages it read back to the kernel so the copy does
/// not double the resident memory while the model loads: the mapping stays valid and faults pages
/// in again only where they are read (a matrix without an interleaved form).
///
/// The copies are anonymous memory that stays resident; the file layout is read from the
/// mapping, whose pages the kernel may drop and read again. A model whose copies would pass its
/// budget (half the physical memory) keeps its experts' matrices in the file layout, and all of
/// them if that is still too much: the products of both layouts are the same bits (the
/// interleaved kernels follow the per-row ones' order), only slower.
enum WeightInterleaver {
    /// `INFERD_INTERLEAVE=0` keeps the file layout (to compare speeds without rebuilding).
    static var enabledByEnvironment: Bool { ProcessInfo.processInfo.environment["INFERD_INTERLEAVE"] != "0" }

    /// Which matrices to copy so that the copies fit in `budget` bytes.
    static func plan(layers: [LlamaModel.Layer], output: WeightMatrix, budget: Int) -> WeightResidency.Copies {
        var all = output.interleavedByteCount
        var experts = 0
        for layer in layers {
            all += layer.matrices.reduce(0) { $0 + $1.interleavedByteCount }
            experts += layer.feedForward.expertMatrices.reduce(0) { $0 + $1.interleavedByteCount }
        }
        if all <= budget { return .all }
        if experts > 0 && all - experts <= budget { return .allButExperts }
        return .none
    }

    /// Interleaves the matrices `copies` names that have a form; returns the buffer holding them
    /// (owned by the caller), or nil when none has one.
    static func interleave(
        layers: inout [LlamaModel.Layer], output: inout WeightMatrix, copies: WeightResidency.Copies
    ) -> UnsafeMutableRawBufferPointer? {
        guard copies != .none else { return nil }
        let experts = copies == .all
        var total = output.interleavedByteCount
        for i in layers.indices {
            layers[i].updateMatrices(experts: experts) { total += $0.interleavedByteCount }
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
            layers[i].updateMatrices(experts: experts) { place(&$0) }
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
