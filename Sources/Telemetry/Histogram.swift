/// A distribution of observed values (latencies, in seconds) in fixed buckets, rendered as a
/// Prometheus histogram: cumulative `_bucket{le="…"}` counts, `_sum` and `_count`.
public struct Histogram: Sendable {
    let storage: HistogramStorage

    /// Records `value`, `count` times (an interval shared by several tokens is one value
    /// observed once per token).
    public func observe(_ value: Double, count: Int = 1) {
        guard count > 0, value.isFinite else { return }
        storage.observe(value, count: count)
    }

    public var count: Int { storage.snapshot().count }
    public var sum: Double { storage.snapshot().sum }
}

/// Latency buckets in seconds, from a millisecond to two minutes: first tokens on a busy server
/// and whole requests fall in the same set, so one set serves every latency series.
public let latencyBuckets: [Double] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
]

final class HistogramStorage: Sendable {
    struct State {
        /// Per bucket (not cumulative); the last is everything above the highest bound.
        var counts: [Int]
        var count = 0
        var sum = 0.0
    }

    let bounds: [Double]
    private let state: Locked<State>

    init(bounds: [Double]) {
        self.bounds = bounds
        state = Locked(State(counts: Array(repeating: 0, count: bounds.count + 1)))
    }

    func observe(_ value: Double, count: Int) {
        // The first bound at or above the value (Prometheus buckets are `le`, inclusive).
        var i = 0
        while i < bounds.count && value > bounds[i] { i += 1 }
        state.withLock { s in
            s.counts[i] += count
            s.count += count
            s.sum += value * Double(count)
        }
    }

    func snapshot() -> State { state.withLock { $0 } }

    /// The series' lines under `name`, with `labels` (already rendered without braces) merged
    /// before `le`.
    func render(name: String, labels: [String: String]) -> String {
        let s = snapshot()
        var out = ""
        var cumulative = 0
        for (i, bound) in bounds.enumerated() {
            cumulative += s.counts[i]
            var l = labels
            l["le"] = Metrics.format(bound)
            out += "\(name)_bucket\(Metrics.renderLabels(l)) \(cumulative)\n"
        }
        var l = labels
        l["le"] = "+Inf"
        out += "\(name)_bucket\(Metrics.renderLabels(l)) \(s.count)\n"
        out += "\(name)_sum\(Metrics.renderLabels(labels)) \(Metrics.format(s.sum))\n"
        out += "\(name)_count\(Metrics.renderLabels(labels)) \(s.count)\n"
        return out
    }
}
