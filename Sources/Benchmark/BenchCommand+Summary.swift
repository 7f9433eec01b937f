import Foundation

/// The lines under the table that put its rows against each other: the prompt-length curve,
/// the scaling from one thread count to the next, and each decode test's weight bandwidth
/// against the memory probe at its own thread count (`probes`, GB/s by threads).
extension BenchCommand {
    static func summaryLines(rows: [Report.Row], tests: [EngineBenchmark.Test], weightBytes: Int, probes: [Int: Double])
        -> [String]
    {
        var lines: [String] = []
        let threadCounts = rows.map(\.threads).reduce(into: [Int]()) { if !$0.contains($1) { $0.append($1) } }
        func median(_ test: EngineBenchmark.Test, _ threads: Int) -> Double? {
            rows.first { $0.test == "\(test)" && $0.threads == threads }?.median
        }
        // Prefill per token as prompts grow, against the shortest prompt measured.
        let prompts = tests.compactMap { test -> Int? in if case .prompt(let n) = test { n } else { nil } }.sorted()
        if prompts.count >= 2 {
            for t in threadCounts {
                guard let base = median(.prompt(prompts[0]), t), base > 0 else { continue }
                let points = prompts.compactMap { n in
                    median(.prompt(n), t).map { String(format: "pp%d %.1f tok/s (%.0f%%)", n, $0, $0 / base * 100) }
                }
                lines.append("prompt curve, \(t) thread\(t == 1 ? "" : "s"): " + points.joined(separator: ", "))
            }
        }
        // Each thread count against the one before it, test by test.
        for (a, b) in zip(threadCounts, threadCounts.dropFirst()) {
            let ratios = tests.compactMap { test -> String? in
                guard let x = median(test, a), let y = median(test, b), x > 0 else { return nil }
                return "\(test) " + String(format: "%.2fx", y / x)
            }
            if !ratios.isEmpty { lines.append("scaling \(a) -> \(b) threads: " + ratios.joined(separator: ", ")) }
        }
        // Decode reads `weightBytes` (what one token's pass reads: every weight of a dense model)
        // once per step (a batched step once for all its sequences).
        for row in rows {
            guard let test = tests.first(where: { "\($0)" == row.test }) else { continue }
            let steps: Double
            switch test {
            case .prompt, .generationAtDepth: continue
            case .generation: steps = row.median
            case .batchedGeneration(_, let s): steps = row.median / Double(s)
            }
            let gbps = steps * Double(weightBytes) / 1e9
            let plural = row.threads == 1 ? "" : "s"
            var line =
                "weight bandwidth, \(row.test) at \(row.threads) thread\(plural): " + String(format: "%.1f GB/s", gbps)
            if let probe = probes[row.threads], probe > 0 {
                line += String(format: " = %.0f%% of the %d-thread probe", gbps / probe * 100, row.threads)
            }
            lines.append(line)
        }
        return lines
    }
}
