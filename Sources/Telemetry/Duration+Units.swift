/// A `Duration` as a floating-point number of seconds or milliseconds, for timings in logs,
/// metrics and reports (the standard library has only its integer `components`).
extension Duration {
    package var inSeconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }

    package var milliseconds: Double { inSeconds * 1000 }
}
