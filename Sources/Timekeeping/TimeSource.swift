/// Where every timing decision reads the time: admission deadlines, the session lease's wait,
/// a waiting turn's expiry, stream heartbeats, the shutdown drain. The server passes
/// `SystemTimeSource`; tests pass a manual source they advance explicitly, so they decide time
/// instead of waiting for it.
///
/// Instants are `ContinuousClock.Instant`s, so deadlines keep their type across the layers; a
/// manual source starts at the real present and moves only when told.
public protocol TimeSource: Sendable {
    /// The present, as this source sees it.
    var now: ContinuousClock.Instant { get }

    /// Returns once `now` has reached `deadline`; throws `CancellationError` if the calling Task
    /// is cancelled first.
    func sleep(until deadline: ContinuousClock.Instant) async throws

    /// Calls `wake` whenever this source's time moves other than by itself (a manual source's
    /// `advance`), so a thread in a timed wait on a condition looks at the time again. The
    /// system's time moves by itself: a timed wait ends on its own, and `wake` is never called.
    func onAdvance(_ wake: @escaping @Sendable () -> Void)
}

extension TimeSource {
    /// Returns once `duration` has passed by this source.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }

    /// How long a thread may block in a timed wait for `deadline`: the time left by this source
    /// (never negative). A manual source calls `onAdvance`'s `wake` when it moves.
    public func timeLeft(until deadline: ContinuousClock.Instant) -> Duration {
        max(.zero, deadline - now)
    }
}

/// The real, monotonic time (`ContinuousClock`).
public struct SystemTimeSource: TimeSource {
    public init() {}

    public var now: ContinuousClock.Instant { .now }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await Task.sleep(until: deadline, clock: .continuous)
    }

    public func onAdvance(_ wake: @escaping @Sendable () -> Void) {}
}

extension TimeSource where Self == SystemTimeSource {
    /// The real time: what the server runs on.
    public static var system: SystemTimeSource { SystemTimeSource() }
}
