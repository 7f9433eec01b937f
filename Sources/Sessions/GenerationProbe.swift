import Synchronization

/// Counts generations running at once for one session, measured around the engine call itself
/// (not from the session's own bookkeeping), so an overlap would show even if the queue logic
/// were wrong.
public final class GenerationProbe: Sendable {
    private let current = Atomic<Int>(0)
    private let peak = Atomic<Int>(0)
    private let total = Atomic<Int>(0)

    public init() {}

    func enter() {
        let now = current.add(1, ordering: .acquiringAndReleasing).newValue
        total.add(1, ordering: .relaxed)
        var seen = peak.load(ordering: .acquiring)
        while now > seen {
            let (exchanged, original) = peak.compareExchange(
                expected: seen, desired: now, ordering: .acquiringAndReleasing)
            if exchanged { break }
            seen = original
        }
    }

    func leave() { current.subtract(1, ordering: .acquiringAndReleasing) }

    /// The most generations this session ever had in the engine at once (must be ≤ 1).
    public var maxConcurrent: Int { peak.load(ordering: .acquiring) }
    public var generations: Int { total.load(ordering: .acquiring) }
}
