/// A registry of counters, gauges and histograms with labels, rendered in the Prometheus text format.
///
/// Every layer registers its own series on the one shared instance. Registering the same
/// name and labels twice returns the same series. Handles are cheap to keep and thread-safe.
public final class Metrics: Sendable {
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    struct Family {
        var help: String
        var kind: Kind
        var series: [String: Series]  // keyed by rendered label set
        /// A histogram family's series, keyed the same way, with their labels.
        var histograms: [String: (labels: [String: String], storage: HistogramStorage)] = [:]
    }

    private let families = Locked<[String: Family]>([:])

    public init() {}

    /// A monotonically increasing counter.
    public func counter(_ name: String, help: String, labels: [String: String] = [:]) -> Counter {
        Counter(series: series(name, help: help, kind: .counter, labels: labels))
    }

    /// A value that goes up and down.
    public func gauge(_ name: String, help: String, labels: [String: String] = [:]) -> Gauge {
        Gauge(series: series(name, help: help, kind: .gauge, labels: labels))
    }

    /// A distribution in `buckets` (upper bounds, ascending). Registering the same name and
    /// labels again returns the same series (with its first buckets).
    public func histogram(
        _ name: String, help: String, labels: [String: String] = [:], buckets: [Double] = latencyBuckets
    ) -> Histogram {
        let key = Self.renderLabels(labels)
        return families.withLock { families in
            if let existing = families[name]?.histograms[key] { return Histogram(storage: existing.storage) }
            let created = HistogramStorage(bounds: buckets.sorted())
            if families[name] == nil {
                families[name] = Family(help: help, kind: .histogram, series: [:])
            }
            families[name]!.histograms[key] = (labels, created)
            return Histogram(storage: created)
        }
    }

    /// The current value of a series, or nil if it was never registered (handy in tests).
    public func value(_ name: String, labels: [String: String] = [:]) -> Double? {
        let key = Self.renderLabels(labels)
        return families.withLock { $0[name]?.series[key] }?.value
    }

    /// All series in the Prometheus text exposition format (version 0.0.4).
    public func render() -> String {
        let snapshot = families.withLock { $0 }
        var out = ""
        for name in snapshot.keys.sorted() {
            let family = snapshot[name]!
            out += "# HELP \(name) \(Self.escapeHelp(family.help))\n"
            out += "# TYPE \(name) \(family.kind.rawValue)\n"
            for key in family.series.keys.sorted() {
                out += "\(name)\(key) \(Self.format(family.series[key]!.value))\n"
            }
            for key in family.histograms.keys.sorted() {
                let h = family.histograms[key]!
                out += h.storage.render(name: name, labels: h.labels)
            }
        }
        return out
    }

    private func series(_ name: String, help: String, kind: Kind, labels: [String: String]) -> Series {
        let key = Self.renderLabels(labels)
        return families.withLock { families in
            if let existing = families[name]?.series[key] { return existing }
            let created = Series()
            if families[name] == nil {
                families[name] = Family(help: help, kind: kind, series: [:])
            }
            families[name]!.series[key] = created
            return created
        }
    }

    static func renderLabels(_ labels: [String: String]) -> String {
        if labels.isEmpty { return "" }
        let parts = labels.keys.sorted().map { "\($0)=\"\(escapeLabelValue(labels[$0]!))\"" }
        return "{" + parts.joined(separator: ",") + "}"
    }

    static func escapeLabelValue(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func escapeHelp(_ s: String) -> String {
        s.replacingAll("\\", with: "\\\\").replacingAll("\n", with: "\\n")
    }

    static func format(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }
}

/// One labelled time series.
final class Series: Sendable {
    private let storage = Locked<Double>(0)
    var value: Double { storage.withLock { $0 } }
    func add(_ d: Double) { storage.withLock { $0 += d } }
    func set(_ v: Double) { storage.withLock { $0 = v } }
}

public struct Counter: Sendable {
    let series: Series
    public func increment(by amount: Double = 1) { series.add(amount) }
    public var value: Double { series.value }
}

public struct Gauge: Sendable {
    let series: Series
    public func set(_ value: Double) { series.set(value) }
    public func add(_ amount: Double) { series.add(amount) }
    public var value: Double { series.value }
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
