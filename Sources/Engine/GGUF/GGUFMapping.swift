import Foundation

/// A whole GGUF file mapped read-only: the bytes tensor views point into.
///
/// Separate from `GGUFFile` so that a model can keep its weights' bytes without keeping the
/// parsed metadata (the tokenizer's vocabulary and merges, some MiB of Swift values that are
/// copied into the tokenizer at load and never read again).
final class GGUFMapping: @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer
    /// The file, kept open for `read(_:at:)`; -1 when it could not be duplicated.
    private let descriptor: Int32

    /// Maps `fd` (a regular file of `size` bytes, still the caller's to close); nil with `errno`
    /// set when the system refuses.
    init?(fd: Int32, size: Int) {
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { return nil }
        bytes = UnsafeRawBufferPointer(start: base, count: size)
        descriptor = dup(fd)
    }

    deinit {
        munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count)
        if descriptor >= 0 { close(descriptor) }
    }

    /// Copies the file's bytes `[offset, offset + destination.count)` into `destination` with
    /// `pread`, not through the mapping: what is read this way never joins the process's resident
    /// memory. Reads through the mapping where the file cannot be read that way (returns false
    /// for a range outside the file).
    @discardableResult
    func read(_ destination: UnsafeMutableRawBufferPointer, at offset: Int) -> Bool {
        guard offset >= 0, offset + destination.count <= bytes.count, let target = destination.baseAddress else {
            return false
        }
        var done = 0
        while descriptor >= 0 && done < destination.count {
            let n = pread(descriptor, target + done, destination.count - done, off_t(offset + done))
            if n > 0 {
                done += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        if done < destination.count {
            (target + done).copyMemory(from: bytes.baseAddress! + offset + done, byteCount: destination.count - done)
        }
        return true
    }

    /// Gives every page of the mapping back to the system; the mapping stays valid and pages
    /// fault in again, from the page cache, where they are read later.
    ///
    /// For after a model has loaded: parsing read the metadata pages, and loading read every
    /// tensor once (norms copied out, matrices copied into their interleaved forms), so without
    /// this the process would keep pages it no longer reads (2.9 MiB for the default model: the
    /// metadata and the edge pages of each copied matrix).
    func releaseResidentPages() {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base), bytes.count, MADV_DONTNEED)
    }

    /// Bytes of the mapping this process has resident right now (its `Rss` line in
    /// /proc/self/smaps; mincore would say which pages the page cache holds, not which this
    /// process maps); nil where the system cannot say.
    func residentBytes() -> Int? {
        guard let base = bytes.baseAddress, let smaps = Self.readWhole("/proc/self/smaps") else { return nil }
        let start = String(UInt(bitPattern: base), radix: 16) + "-"
        var inMapping = false
        for line in smaps.split(separator: "\n") {
            let range = line.prefix { $0 != " " }.split(separator: "-")
            if range.count == 2 && range.allSatisfy({ $0.allSatisfy(\.isHexDigit) }) {
                inMapping = line.hasPrefix(start)
            } else if inMapping && line.hasPrefix("Rss:") {
                let kib = line.dropFirst(4).split(separator: " ").first.flatMap { Int($0) }
                return kib.map { $0 * 1024 }
            }
        }
        return nil
    }

    /// A /proc file's text, read to its end (Foundation's readers stop after the first read,
    /// since such files report a size of 0).
    private static func readWhole(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            #if canImport(Glibc)
                let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            #else
                let n = chunk.withUnsafeMutableBytes { Darwin.read(fd, $0.baseAddress, $0.count) }
            #endif
            if n > 0 {
                data.append(contentsOf: chunk[0..<n])
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        return String(decoding: data, as: UTF8.self)
    }
}
