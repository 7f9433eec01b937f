import CMalloc

/// How the server's process uses glibc's allocator.
enum MallocTuning {
    /// Blocks of at least this size are mapped on their own and unmapped when freed: glibc's own
    /// starting value, which also covers each job's 192 KiB logits buffer (a churn run ended
    /// 8.6 % above its baseline RSS at 1 MiB, 0.6 % above at 128 KiB).
    static let mmapThresholdBytes: Int32 = 128 << 10

    /// Makes freed large blocks go back to the system.
    ///
    /// Every generation allocates blocks of a few hundred KiB (its 192 KiB logits buffer among
    /// them) and frees them at the end. glibc starts out mapping such blocks on their own, but
    /// after the first one is freed it raises its threshold to that size, and from then on serves
    /// them from its heaps, which keep freed memory. Setting the threshold turns that adjustment
    /// off. KV caches, the largest per-generation memory, now map their own storage (`KVCache`);
    /// when they were malloc'd, a 64-client churn run without this grew from 1.0 GB to 1.5 GB and
    /// never came back.
    /// Returns false where the allocator refused (another libc).
    @discardableResult
    static func returnLargeBlocksToTheSystem() -> Bool {
        mallopt(M_MMAP_THRESHOLD, mmapThresholdBytes) == 1
    }
}
