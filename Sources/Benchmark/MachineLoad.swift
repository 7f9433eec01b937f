import Foundation
import Telemetry

/// How much CPU other processes use, from /proc: the benchmark waits for a quiet machine before
/// each sample (as llama.cpp's reference figures were taken) and reports what others used while
/// it measured, so a figure from a busy machine says so. Elsewhere than Linux it reports nothing.
public struct MachineLoad: Sendable {
    /// Busy CPU ticks of the whole machine and of this process.
    struct Ticks {
        var all: Double
        var mine: Double
    }

    static func ticks() -> Ticks? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let own = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        else { return nil }
        // cpu  user nice system idle iowait irq softirq steal ...
        let cpu = stat.split(separator: "\n").first?.split(separator: " ").dropFirst().compactMap { Double($0) } ?? []
        guard cpu.count >= 8 else { return nil }
        let all = cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + cpu[7]
        // After the command name: state is field 3, utime and stime fields 14 and 15.
        let fields = own.split(separator: ")").last?.split(separator: " ") ?? []
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return Ticks(all: all, mine: user + system)
    }

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Cores other processes used between two readings `seconds` apart.
    static func othersCores(from a: Ticks, to b: Ticks, seconds: Double) -> Double {
        guard seconds > 0 else { return 0 }
        return max(0, ((b.all - a.all) - (b.mine - a.mine)) / ticksPerSecond / seconds)
    }

    /// Waits (at most `limit` seconds) until other processes use less than `threshold` cores
    /// over half a second; returns what they used in the last window (nil without /proc).
    @discardableResult
    public static func waitUntilQuiet(threshold: Double = 0.1, limit: Double = 10) -> Double? {
        let start = ContinuousClock.now
        var others: Double?
        repeat {
            guard let a = ticks() else { return nil }
            usleep(500_000)
            guard let b = ticks() else { return nil }
            others = othersCores(from: a, to: b, seconds: 0.5)
            if let o = others, o < threshold { break }
        } while (ContinuousClock.now - start) < .seconds(limit)
        return others
    }

    /// Measures what other processes use while `body` runs.
    public static func measuringOthers<T>(_ body: () throws -> T) rethrows -> (T, othersCores: Double?) {
        let a = ticks()
        let start = ContinuousClock.now
        let value = try body()
        let seconds = (ContinuousClock.now - start).inSeconds
        guard let a, let b = ticks() else { return (value, nil) }
        return (value, othersCores(from: a, to: b, seconds: seconds))
    }
}
