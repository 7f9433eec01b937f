import Telemetry

/// How many generations the engine steps at once, how many may wait, and when a background
/// generation gives its place to an interactive one. See `AdmissionQueue` for the rules.
public struct AdmissionPolicy: Sendable, Equatable {
    /// Generations stepped together (`max_active_sequences`).
    public var maxActiveSequences: Int
    /// Generations that may wait for a place (`max_queue`); one more is refused as busy.
    public var maxQueue: Int
    /// An interactive generation that has waited this long takes the place of a running
    /// background one (`preempt_after_ms`).
    public var preemptAfter: Duration
    /// Starvation guard: when no background generation runs and the first one waiting has
    /// waited `starvationFactor` × `preemptAfter` (and at least `starvationFloor`), it gets the
    /// next free place ahead of interactive ones.
    public var starvationFactor: Int
    public var starvationFloor: Duration
    /// A background generation that has just been given a place runs this many steps before it
    /// can be preempted, so every admission makes progress.
    public var minimumStepsBeforePreemption: Int

    public init(
        maxActiveSequences: Int = 8, maxQueue: Int = 64, preemptAfter: Duration = .milliseconds(500),
        starvationFactor: Int = 4, starvationFloor: Duration = .seconds(1), minimumStepsBeforePreemption: Int = 16
    ) {
        self.maxActiveSequences = max(1, maxActiveSequences)
        self.maxQueue = max(0, maxQueue)
        self.preemptAfter = max(.zero, preemptAfter)
        self.starvationFactor = max(1, starvationFactor)
        self.starvationFloor = max(.zero, starvationFloor)
        self.minimumStepsBeforePreemption = max(0, minimumStepsBeforePreemption)
    }

    /// How long the first waiting background generation waits before the starvation guard
    /// gives it the next free place.
    public var starvationAfter: Duration { max(preemptAfter * starvationFactor, starvationFloor) }
}
