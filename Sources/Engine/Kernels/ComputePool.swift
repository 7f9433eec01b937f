import CKernels
import Foundation

/// A fixed set of compute threads (the caller's thread counts as one) that split matrix rows
/// and attention heads. Persistent: threads spin briefly between tasks, then sleep on a futex.
/// One caller at a time; the model serializes its forward passes.
public final class ComputePool: @unchecked Sendable {
    let raw: OpaquePointer
    public let threads: Int

    /// - Parameter threads: total threads including the caller; values below 1 mean 1.
    public init(threads: Int) {
        let n = max(1, threads)
        self.threads = n
        raw = ck_pool_create(Int32(n))
    }

    deinit { ck_pool_destroy(raw) }

    /// Number of CPU cores the process may use.
    public static var defaultThreadCount: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }
}
