import CKernels
import Foundation

/// Copies a model's weight matrices into anonymous memory once at load time (a
/// `WeightCopyBuffer`): each into its interleaved form where it has one (see
/// CKernels/interleave.c), else as the file has it, so products stream every matrix from memory
/// they read faster than the file's mapping. Then gives the file pages it read back to the kernel
/// so the copy does not double the resident memory while the model loads: the mapping stays
/// valid and faults pages in again only where they are read (the token embedding's rows).
///
/// The copies stay resident; the file layout is read from the mapping, whose pages the kernel
/// may drop and read again. A model whose copies would pass its budget (half the physical
/// memory) keeps its experts' matrices in the file, and all of them if that is still too much:
/// the products are the same bits either way (the interleaved kernels follow the per-row ones'
/// order; a verbatim copy is the same rows), only slower.
enum WeightCopier {
    /// `INFERD_INTERLEAVE=0` copies nothing and keeps the file layout (to compare speeds
    /// without rebuilding).
    static var enabledByEnvironment: Bool { ProcessInfo.processInfo.environment["INFERD_INTERLEAVE"] != "0" }

    /// Every copy starts `pageOffset` bytes into a 4 KiB page. Starting them on page boundaries
    /// cost BF16 prompts 5–8 % (the 1.7B shape, one thread: pp128 47.4–48.4 tokens/s against
    /// 51.7–52.8 at 448, the file's own offset, and 50.8–51.4 at 2048; decode the same at all
    /// three): a tile's weight rows, 4 KiB apart, then share their cache sets with the page-aligned
    /// activation and output rows.
    static let page = 4096
    static let pageOffset = 448

    /// Bytes a matrix's copy takes in the buffer, room to start at `pageOffset` included.
    static func reserved(_ matrix: WeightMatrix) -> Int { matrix.copyByteCount + page }

    /// Which matrices to copy so that the copies fit in `budget` bytes.
    static func plan(layers: [LlamaModel.Layer], output: WeightMatrix, budget: Int) -> WeightResidency.Copies {
        var all = reserved(output)
        var experts = 0
        for layer in layers {
            all += layer.matrices.reduce(0) { $0 + reserved($1) }
            experts += layer.feedForward.expertMatrices.reduce(0) { $0 + reserved($1) }
        }
        if all <= budget { return .all }
        if experts > 0 && all - experts <= budget { return .allButExperts }
        return .none
    }

    /// Copies the matrices `copies` names; returns the buffer holding them (owned by the
    /// caller), or nil when there is none to copy or the system refuses the memory.
    static func copy(
        layers: inout [LlamaModel.Layer], output: inout WeightMatrix, copies: WeightResidency.Copies
    ) -> WeightCopyBuffer? {
        guard copies != .none else { return nil }
        let experts = copies == .all
        // Where each copy goes, in the order `updateMatrices` visits the matrices; the buffer is
        // as long as the placement.
        var placed: [(matrix: WeightMatrix, offset: Int)] = []
        var offset = 0
        func place(_ matrix: inout WeightMatrix) {
            offset += (Self.pageOffset - offset) & (Self.page - 1)
            placed.append((matrix, offset))
            offset += matrix.copyByteCount
        }
        for i in layers.indices {
            layers[i].updateMatrices(experts: experts) { place(&$0) }
        }
        place(&output)
        guard let buffer = WeightCopyBuffer(byteCount: offset) else { return nil }
        let base = buffer.bytes.baseAddress!
        // The copies, on every core: most of their time is the kernel handing out (zeroing) the
        // buffer's pages as they are first written, which runs on the thread that writes.
        let jobs = Jobs(placed: placed, base: base)
        defer { jobs.types.deallocate() }
        DispatchQueue.concurrentPerform(iterations: placed.count) { jobs.run($0) }
        var next = 0
        func point(_ matrix: inout WeightMatrix) {
            matrix.readCopy(at: base + placed[next].offset, as: jobs.types[next])
            release(matrix.data, byteCount: matrix.rows * matrix.rowBytes)
            next += 1
        }
        for i in layers.indices {
            layers[i].updateMatrices(experts: experts) { point(&$0) }
        }
        point(&output)
        return buffer
    }

    /// The copies to write, shared by the threads that write them: job `j` reads its matrix's
    /// file rows and writes only its own destination and `types[j]`, so they need no lock.
    private struct Jobs: @unchecked Sendable {
        let placed: [(matrix: WeightMatrix, offset: Int)]
        let base: UnsafeMutableRawPointer
        let types: UnsafeMutableBufferPointer<Int32>

        init(placed: [(matrix: WeightMatrix, offset: Int)], base: UnsafeMutableRawPointer) {
            self.placed = placed
            self.base = base
            types = .allocate(capacity: placed.count)
        }

        func run(_ j: Int) { types[j] = placed[j].matrix.writeCopy(into: base + placed[j].offset) }
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
