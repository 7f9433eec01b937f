import CKernels
import Foundation
import Testing

@testable import Engine

/// Speed figures on the real model: decode tok/s (128 tokens after a short prompt) and prompt
/// tok/s (512 tokens in chunks of 64), medians of several runs, 1 and 2 threads.
/// Opt-in because it takes a while and wants a quiet machine: INFERD_BENCH=1 swift test ...
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["INFERD_BENCH"] != nil))
struct ModelSpeedTests {
    static func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// CPU time of the whole process: with one thread, a throughput figure that other processes
    /// competing for the cores do not distort.
    static func cpu() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Busy CPU ticks of the whole machine and of this process (from /proc).
    static func busyTicks() -> (all: Double, mine: Double) {
        func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        let cpu =
            read("/proc/stat").split(separator: "\n").first?.split(separator: " ").dropFirst().compactMap {
                Double($0)
            } ?? []
        // user nice system idle iowait irq softirq steal
        let all = cpu.count >= 8 ? cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + cpu[7] : 0
        let fields = read("/proc/self/stat").split(separator: ")").last?.split(separator: " ") ?? []
        let mine = fields.count > 13 ? (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0) : 0
        return (all, mine)
    }

    /// Waits (at most `limit` seconds) until other processes use less than 0.1 core over 0.5 s,
    /// as the llama.cpp measurements did; returns the cores others used in the last window.
    @discardableResult
    static func waitQuiet(limit: Double = 8) -> Double {
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        let start = now()
        var others = 0.0
        repeat {
            let a = busyTicks()
            usleep(500_000)
            let b = busyTicks()
            others = ((b.all - a.all) - (b.mine - a.mine)) / hz / 0.5
            if others < 0.1 { break }
        } while now() - start < limit
        return others
    }

    @Test func matmulKernelSpeed() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 1)
        let l2Output = WeightMatrix(
            name: "token_embd (first 1024 rows)", type: model.output.type, columns: model.output.columns, rows: 1024,
            data: model.output.data, rowBytes: model.output.rowBytes)
        for w in [
            model.layers[0].feedForward.dense!.gate, model.layers[0].feedForward.dense!.down, l2Output, model.output,
        ] {
            let n = 1
            var x = [Float](repeating: 0.5, count: w.columns * n)
            for i in x.indices { x[i] = Float(i % 17) - 8 }
            let qRow = w.columns / 32 * 36
            var q = [UInt8](repeating: 0, count: qRow * n)
            var y = [Float](repeating: 0, count: w.rows * n)
            q.withUnsafeMutableBytes { qb in
                if w.type == .q4_1 {
                    ck_quantize_row_q8_1(
                        x, qb.baseAddress!.assumingMemoryBound(to: ck_block_q8_1.self), Int32(w.columns))
                } else {
                    ck_quantize_row_q8_0(
                        x, qb.baseAddress!.assumingMemoryBound(to: ck_block_q8_0.self), Int32(w.columns))
                }
            }
            let reps = w.rows > 10000 ? 20 : 1000
            let c0 = Self.cpu()
            q.withUnsafeBytes { qb in
                y.withUnsafeMutableBufferPointer { yb in
                    var args = ck_matmul_args(
                        type: w.kernelType, w: w.data, w_row_bytes: w.rowBytes, rows: Int32(w.rows),
                        k: Int32(w.columns),
                        x: qb.baseAddress!, x_row_bytes: w.type == .q4_1 ? qRow : w.columns / 32 * 34, n: Int32(n),
                        y: yb.baseAddress!, ldy: Int32(w.rows), orders: nil)
                    for _ in 0..<reps { ck_matmul(nil, &args) }
                }
            }
            let dt = (Self.cpu() - c0) / Double(reps)
            let gbs = Double(w.rowBytes * w.rows) / dt / 1e9
            print(
                "kernel \(w.name) \(w.type) \(w.rows)x\(w.columns): \(String(format: "%.1f", dt * 1e6)) us, \(String(format: "%.1f", gbs)) GB/s (cpu time)"
            )
        }
    }

    @Test(arguments: [1, 2])
    func decodeAndPromptSpeed(threads: Int) throws {
        if let only = ProcessInfo.processInfo.environment["INFERD_BENCH_THREADS"], Int(only) != threads { return }
        let runs = Int(ProcessInfo.processInfo.environment["INFERD_BENCH_RUNS"] ?? "") ?? 5
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: threads)
        var logits = [Float](repeating: 0, count: model.config.vocabularySize)
        let prompt: [Int32] = [1, 9690, 198, 2683, 359, 253, 5356, 5646]
        var decode: [Double] = []
        var prefill: [Double] = []
        var decodeCPU: [Double] = []
        var prefillCPU: [Double] = []
        let cache = model.makeCache(capacity: 1024)
        var noise: [Double] = []
        var decodeClean: [Double] = []
        var prefillClean: [Double] = []
        for _ in 0..<runs {
            let quiet = Self.waitQuiet()
            noise.append(quiet)
            cache.truncate(to: 0)
            try logits.withUnsafeMutableBufferPointer { out in
                try model.forward(tokens: prompt, cache: cache, logits: out)
                var next: Int32 = 504
                let start = Self.now()
                let c0 = Self.cpu()
                for _ in 0..<128 {
                    try model.forward(tokens: [next], cache: cache, logits: out)
                    next = Int32(out.indices.max { out[$0] < out[$1] }!)
                }
                decode.append(128 / (Self.now() - start))
                if quiet < 0.1 { decodeClean.append(decode.last!) }
                decodeCPU.append(128 / (Self.cpu() - c0))
            }
            if ProcessInfo.processInfo.environment["INFERD_BENCH_DECODE_ONLY"] != nil { continue }
            let quietPrefill = Self.waitQuiet()
            cache.truncate(to: 0)
            let long = (0..<512).map { Int32(($0 * 7919) % 49152) }
            try logits.withUnsafeMutableBufferPointer { out in
                let start = Self.now()
                let c0 = Self.cpu()
                var i = 0
                while i < long.count {
                    try model.forward(tokens: Array(long[i..<i + 64]), cache: cache, logits: out)
                    i += 64
                }
                prefill.append(512 / (Self.now() - start))
                if quietPrefill < 0.1 { prefillClean.append(prefill.last!) }
                prefillCPU.append(512 / (Self.cpu() - c0) * Double(threads))
            }
        }
        if prefill.isEmpty { prefill = [0] }
        if prefillCPU.isEmpty { prefillCPU = [0] }
        let fmt = { (xs: [Double]) in xs.map { String(format: "%.1f", $0) }.joined(separator: " ") }
        print("speed threads=\(threads): other processes before each run (cores): \(fmt(noise))")
        print(
            "speed threads=\(threads): tg128 median \(String(format: "%.1f", Self.median(decode))) tok/s [\(fmt(decode))]"
        )
        if !decodeClean.isEmpty {
            print(
                "speed threads=\(threads): tg128 quiet runs median \(String(format: "%.1f", Self.median(decodeClean))) [\(fmt(decodeClean))]"
            )
        }
        if !prefillClean.isEmpty {
            print(
                "speed threads=\(threads): pp512 quiet runs median \(String(format: "%.1f", Self.median(prefillClean))) [\(fmt(prefillClean))]"
            )
        }
        print("speed threads=\(threads): tg128 per CPU-second \(String(format: "%.1f", Self.median(decodeCPU)))")
        print(
            "speed threads=\(threads): pp512 per CPU-second x threads \(String(format: "%.1f", Self.median(prefillCPU)))"
        )
        print(
            "speed threads=\(threads): pp512 median \(String(format: "%.1f", Self.median(prefill))) tok/s [\(fmt(prefill))]"
        )
    }
}
