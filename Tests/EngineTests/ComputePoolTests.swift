import CKernels
import Testing

@testable import Engine

/// The pool runs every chunk of a task exactly once and returns only when all are done, also when
/// tasks of different chunk counts follow each other with no gap (as decode attention's scores,
/// softmax and lane sums do): a worker that saw the previous task fully claimed must not take
/// a chunk of the next one before it is published.
struct ComputePoolTests {
    /// One task's record: which task wrote each chunk's slot, and how often (raw memory: chunks
    /// on different threads write different slots).
    final class Record: @unchecked Sendable {
        let owner = UnsafeMutablePointer<Int32>.allocate(capacity: 64)
        let runs = UnsafeMutablePointer<Int32>.allocate(capacity: 64)
        var task: Int32 = 0
        init() { owner.initialize(repeating: -1, count: 64) }
        deinit {
            owner.deallocate()
            runs.deallocate()
        }
    }

    @Test func backToBackTasksOfGrowingSizesRunEachChunkOnce() {
        let pool = ComputePool(threads: 2)
        let sizes = [3, 9, 24, 64]
        let records = sizes.map { _ in Record() }
        let fn: ck_chunk_fn = { ctx, chunk, _ in
            let record = Unmanaged<Record>.fromOpaque(ctx!).takeUnretainedValue()
            record.owner[Int(chunk)] = record.task
            record.runs[Int(chunk)] += 1
        }
        var failures = 0
        for round in 0..<20_000 {
            for (k, record) in records.enumerated() {
                record.task = Int32(round * sizes.count + k)
                record.runs.initialize(repeating: 0, count: 64)
            }
            // The tasks follow each other with nothing in between, as in decode attention.
            for (record, n) in zip(records, sizes) {
                ck_pool_run_chunks(pool.raw, fn, Unmanaged.passUnretained(record).toOpaque(), Int32(n))
            }
            for (record, n) in zip(records, sizes) {
                let wrong = (0..<64).first { i in
                    i < n ? record.owner[i] != record.task || record.runs[i] != 1 : record.runs[i] != 0
                }
                guard let i = wrong else { continue }
                failures += 1
                if failures <= 3 {
                    Issue.record(
                        "task \(record.task) of \(n) chunks: chunk \(i) ran \(record.runs[i]) times, last by task \(record.owner[i])"
                    )
                }
            }
        }
        #expect(failures == 0)
    }
}
