import CKernels
import Foundation
import Testing

@testable import Engine

/// What verifying k drafted tokens costs against one decode step: `forward(decodeRows:)` over
/// 1...6 rows on the default model (and INFERD_BENCH_MODEL, e.g. an F16 one), medians of many
/// passes at the end of a 100-token context, with the 16-lane interleaved kernels and without
/// (alternated pass by pass, so a noisy machine weighs on both alike). Speculation pays only
/// while k rows cost little more than one.
/// Opt-in: INFERD_BENCH=1 [INFERD_BENCH_THREADS=1] swift test ... --filter DecodeRowsSpeedTests
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["INFERD_BENCH"] != nil))
struct DecodeRowsSpeedTests {
    @Test func decodeRowsCostAgainstOneStep() throws {
        defer { ck_set_wide_groups(1) }
        let environment = ProcessInfo.processInfo.environment
        var paths = [try TestFixtures.requireModel()]
        if let extra = environment["INFERD_BENCH_MODEL"] { paths.append(extra) }
        let threads = Int(environment["INFERD_BENCH_THREADS"] ?? "") ?? 2
        // One thread: process CPU time, which the other processes on a shared machine distort
        // less than wall time.
        let clock = threads == 1 ? ModelSpeedTests.cpu : ModelSpeedTests.now
        // INFERD_BENCH_K: that many rows only (a profile of one width).
        let only = Int(environment["INFERD_BENCH_K"] ?? "")
        for path in paths {
            let model = try LlamaModel(gguf: try GGUFFile(path: path), threads: threads)
            let v = model.config.vocabularySize
            let context: [Int32] = [1] + (1..<100).map { Int32(1000 + ($0 * 37) % 4000) }
            let cache = model.makeCache(capacity: context.count + 16)
            var rows = [Float](repeating: 0, count: 8 * v)
            try rows.withUnsafeMutableBufferPointer { buffer in
                try model.forward(tokens: context[...], cache: cache, logits: buffer)
            }
            var single = [0.0, 0.0]
            var lines = ["", ""]
            for k in only.map({ [$0] }) ?? Array(1...6) {
                let drafted = (0..<k).map { Int32(400 + $0) }
                var times: [[Double]] = [[], []]
                for i in 0..<(only == nil ? 60 : 400) {
                    let wide = i % 2
                    ck_set_wide_groups(Int32(wide))
                    let start = clock()
                    try rows.withUnsafeMutableBufferPointer { buffer in
                        try model.forward(decodeRows: drafted[...], cache: cache, rows: buffer)
                    }
                    times[wide].append(clock() - start)
                    cache.truncate(to: context.count)
                }
                for wide in 0...1 {
                    let median = ModelSpeedTests.median(times[wide])
                    if k == 1 { single[wide] = median }
                    lines[wide] += String(format: " k=%d %.2f ms (%.2fx)", k, median * 1000, median / single[wide])
                }
            }
            let name = (path as NSString).lastPathComponent
            print("\(name) threads \(threads) eight-lane:\(lines[0])")
            print("\(name) threads \(threads) wide:\(lines[1])")
        }
    }
}
