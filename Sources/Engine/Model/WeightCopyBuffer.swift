import Foundation

/// The anonymous memory a model's weight copies live in (`WeightCopier`): mapped on 2 MiB
/// boundaries and marked for transparent huge pages.
///
/// Why: a decode step streams every weight once, and how fast one core streams depends on where
/// the bytes are. A 1 GiB walk of BF16 rows (`vdpbf16ps`, one thread, Zen 4) read 21.6–22.6 GB/s
/// from the file's mapping (page cache, 4 KiB pages), 24.7–26.0 from anonymous 4 KiB pages and
/// 26.8 from huge pages (k = 2048; k = 8192: 18.9, 22.3, 24.5). Linux's default here is
/// `madvise`: memory not marked keeps 4 KiB pages.
final class WeightCopyBuffer {
    /// The usable bytes, at the start of the mapping (a multiple of 2 MiB apart from it).
    let bytes: UnsafeMutableRawBufferPointer
    private let mapped: UnsafeMutableRawPointer
    private let mappedCount: Int

    static let hugePage = 2 << 20

    /// Nil when the system refuses the mapping (the caller then copies nothing).
    init?(byteCount: Int) {
        guard byteCount > 0 else { return nil }
        // Over-map by one huge page so a 2 MiB boundary lies inside, then use from there.
        let count = byteCount + Self.hugePage
        guard let base = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            base != MAP_FAILED
        else { return nil }
        let aligned = (Int(bitPattern: base) + Self.hugePage - 1) / Self.hugePage * Self.hugePage
        let start = base + (aligned - Int(bitPattern: base))
        // Advice only: where huge pages are off or unavailable the copy gets 4 KiB pages.
        _ = madvise(start, byteCount, MADV_HUGEPAGE)
        mapped = base
        mappedCount = count
        bytes = UnsafeMutableRawBufferPointer(start: start, count: byteCount)
    }

    deinit { munmap(mapped, mappedCount) }
}
