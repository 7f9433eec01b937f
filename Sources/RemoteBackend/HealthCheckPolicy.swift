/// How upstreams are watched: a `GET {base}/models` every `interval`; `downAfter` failures in a
/// row mark one down (it gets no new generations), `upAfter` successes in a row mark it up again.
/// A request that could not reach an upstream counts as a failed check.
public struct HealthCheckPolicy: Sendable, Equatable {
    /// Time between two checks of one upstream (`upstream_health_interval_seconds`, 5 s).
    public var interval: Duration
    /// Failures in a row that mark an upstream down (`upstream_down_after`, 2).
    public var downAfter: Int
    /// Successes in a row that mark a down upstream up (`upstream_up_after`, 1).
    public var upAfter: Int
    /// Longest a check may take before it counts as failed (`upstream_health_timeout_seconds`, 2 s).
    public var timeout: Duration

    public init(
        interval: Duration = .seconds(5), downAfter: Int = 2, upAfter: Int = 1, timeout: Duration = .seconds(2)
    ) {
        self.interval = max(.milliseconds(10), interval)
        self.downAfter = max(1, downAfter)
        self.upAfter = max(1, upAfter)
        self.timeout = max(.milliseconds(10), timeout)
    }
}
