#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How much of a mapping is in memory: what the KV cache and the model file's mapping report,
/// so tests can check that memory follows use without reading the whole process's figures.
enum ResidentPages {
    /// Bytes resident in `[start, start + byteCount)` (`start` page-aligned, as a mapping's base
    /// is), from mincore; nil where the system cannot say.
    static func bytes(start: UnsafeRawPointer, byteCount: Int) -> Int? {
        guard byteCount > 0 else { return 0 }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let pages = (byteCount + page - 1) / page
        var vector = [UInt8](repeating: 0, count: pages)
        let address = UnsafeMutableRawPointer(mutating: start)
        #if canImport(Glibc)
            let status = vector.withUnsafeMutableBufferPointer { mincore(address, byteCount, $0.baseAddress) }
        #else
            let status = vector.withUnsafeMutableBufferPointer {
                mincore(
                    address, byteCount, UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self))
            }
        #endif
        guard status == 0 else { return nil }
        return vector.reduce(0) { $0 + Int($1 & 1) } * page
    }
}
