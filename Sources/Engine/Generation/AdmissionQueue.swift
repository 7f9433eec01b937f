import Telemetry

/// Which generations the engine steps and which wait, as pure state: every change returns what
/// the worker must do, and time comes in as an argument, so the rules are tested without
/// threads or clocks.
///
/// Rules:
/// - At most `maxActiveSequences` generations run. A new one runs at once when there is room
///   and nobody waits; otherwise it waits, unless `maxQueue` already wait: then it is refused
///   (with a `Retry-After` estimate).
/// - Waiting order: interactive before background, first come first served within each.
///   Waiters hear their 1-based position whenever it changes.
/// - Deadlines: a waiter past its deadline leaves the queue (`expireWaiting`); a running
///   generation past it is ended (`expireActive`).
/// - Preemption: when the first interactive waiter has waited `preemptAfter` and no place is
///   free, a running background generation that has made `minimumStepsBeforePreemption` steps
///   since it was given its place is parked (its state kept by the worker) at the front of the
///   background queue, and the interactive one takes its place.
/// - Starvation guard: when no background generation runs and the first background waiter has
///   waited `starvationAfter`, it takes the next free place ahead of interactive waiters. Then it
///   cannot be preempted for `minimumStepsBeforePreemption` steps: background work always moves.
struct AdmissionQueue<ID: Hashable & Sendable>: Sendable {
    typealias Instant = ContinuousClock.Instant

    enum SubmitDecision: Sendable, Equatable {
        /// It runs now (the worker picks it up before its next round).
        case admitted
        /// It waits at `position` (1 is next).
        case queued(position: Int)
        /// The queue is full; try again in about `retryAfterSeconds` (at least 1).
        case refused(queueLength: Int, retryAfterSeconds: Int)
    }

    enum Action: Sendable, Equatable {
        /// Start stepping it (or resume a parked one where it stopped).
        case admit(ID)
        /// Stop stepping it, keep its state: it waits at the front of the background queue.
        case park(ID)
        /// Its deadline passed while it waited; it has left the queue.
        case expireWaiting(ID)
        /// Its deadline passed while it ran; end it at this step boundary.
        case expireActive(ID)
        /// Its place in the queue is now `position`.
        case position(ID, Int)
    }

    struct Waiter: Sendable, Equatable {
        var id: ID
        var priority: GenerationPriority
        var deadline: Instant?
        var waitingSince: Instant
        /// Time it already held a place (a parked generation), for the mean service time.
        var served: Duration = .zero
        var lastNotifiedPosition: Int?
    }

    struct Running: Sendable, Equatable {
        var id: ID
        var priority: GenerationPriority
        var deadline: Instant?
        var admittedAt: Instant
        var served: Duration
        /// Steps since it was given its place (not since it first started).
        var steps = 0
    }

    let policy: AdmissionPolicy
    private(set) var running: [Running] = []
    private var interactive: [Waiter] = []
    private var background: [Waiter] = []
    /// Mean time a generation holds a place, smoothed; nil until one has finished.
    private(set) var meanService: Duration?

    init(policy: AdmissionPolicy) { self.policy = policy }

    var waitingCount: Int { interactive.count + background.count }
    var runningCount: Int { running.count }
    var isEmpty: Bool { running.isEmpty && waitingCount == 0 }

    func isRunning(_ id: ID) -> Bool { running.contains { $0.id == id } }
    func isWaiting(_ id: ID) -> Bool { (interactive + background).contains { $0.id == id } }

    /// Waiting ids in the order they will be given a place, as of `now`.
    func order(at now: Instant) -> [ID] { ordered(at: now).map(\.id) }

    // MARK: Changes

    mutating func submit(
        _ id: ID, priority: GenerationPriority, deadline: Instant?, now: Instant
    ) -> SubmitDecision {
        if running.count < policy.maxActiveSequences && waitingCount == 0 {
            running.append(Running(id: id, priority: priority, deadline: deadline, admittedAt: now, served: .zero))
            return .admitted
        }
        guard waitingCount < policy.maxQueue else {
            return .refused(queueLength: waitingCount, retryAfterSeconds: retryAfterSeconds)
        }
        let waiter = Waiter(id: id, priority: priority, deadline: deadline, waitingSince: now)
        switch priority {
        case .interactive: interactive.append(waiter)
        case .background: background.append(waiter)
        }
        return .queued(position: order(at: now).firstIndex(of: id)! + 1)
    }

    /// Takes a waiter out of the queue (it was cancelled). False when it is not waiting: a
    /// running generation is stopped by the worker and reported with `finished`.
    mutating func remove(_ id: ID) -> Bool {
        if let i = interactive.firstIndex(where: { $0.id == id }) {
            interactive.remove(at: i)
            return true
        }
        if let i = background.firstIndex(where: { $0.id == id }) {
            background.remove(at: i)
            return true
        }
        return false
    }

    /// Takes every waiter out of the queue (shutdown); returns their ids.
    mutating func removeAllWaiting() -> [ID] {
        defer {
            interactive.removeAll()
            background.removeAll()
        }
        return (interactive + background).map(\.id)
    }

    /// The worker stepped these running generations once more.
    mutating func stepped(_ ids: some Sequence<ID>) {
        for id in ids {
            if let i = running.firstIndex(where: { $0.id == id }) { running[i].steps += 1 }
        }
    }

    /// A running generation ended; its place is free. False when it was not running.
    @discardableResult
    mutating func finished(_ id: ID, now: Instant) -> Bool {
        guard let i = running.firstIndex(where: { $0.id == id }) else { return false }
        let r = running.remove(at: i)
        recordService(r.served + (now - r.admittedAt))
        return true
    }

    /// Applies deadlines, preemption and admissions as of `now`; returns what the worker must
    /// do, in order (parks before the admissions that take their places).
    mutating func update(now: Instant) -> [Action] {
        // Runs every engine round: it builds no array unless it has something to report.
        var actions: [Action] = []
        Self.expire(&interactive, now: now, into: &actions)
        Self.expire(&background, now: now, into: &actions)
        for r in running where r.deadline.map({ $0 <= now }) ?? false {
            finished(r.id, now: now)
            actions.append(.expireActive(r.id))
        }
        while true {
            while running.count < policy.maxActiveSequences, let next = popNext(at: now) {
                running.append(
                    Running(
                        id: next.id, priority: next.priority, deadline: next.deadline, admittedAt: now,
                        served: next.served))
                actions.append(.admit(next.id))
            }
            guard let victim = preemptionVictim(at: now) else { break }
            let r = running.remove(at: victim)
            background.insert(
                Waiter(
                    id: r.id, priority: r.priority, deadline: r.deadline, waitingSince: now,
                    served: r.served + (now - r.admittedAt)),
                at: 0)
            actions.append(.park(r.id))
        }
        // Positions in the order of `ordered(at:)`, without building it.
        var position = 0
        let starvedHead = background.first.map { isStarved($0, at: now) } ?? false
        if starvedHead { Self.notify(&background[0], &position, into: &actions) }
        for i in interactive.indices { Self.notify(&interactive[i], &position, into: &actions) }
        for i in background.indices.dropFirst(starvedHead ? 1 : 0) {
            Self.notify(&background[i], &position, into: &actions)
        }
        return actions
    }

    /// Takes the waiters past their deadlines out of `list`, in order.
    private static func expire(_ list: inout [Waiter], now: Instant, into actions: inout [Action]) {
        var i = 0
        while i < list.count {
            if let deadline = list[i].deadline, deadline <= now {
                actions.append(.expireWaiting(list[i].id))
                list.remove(at: i)
            } else {
                i += 1
            }
        }
    }

    /// Gives the next position to `waiter`, reporting it when it changed.
    private static func notify(_ waiter: inout Waiter, _ position: inout Int, into actions: inout [Action]) {
        position += 1
        if waiter.lastNotifiedPosition != position {
            waiter.lastNotifiedPosition = position
            actions.append(.position(waiter.id, position))
        }
    }

    /// The next moment `update` could change something by itself (a deadline, a preemption, the
    /// starvation guard), so an idle worker knows how long it may sleep. Nil: only a submission,
    /// a cancellation or a finished step can.
    func nextWakeUp() -> Instant? {
        var times = (interactive + background).compactMap(\.deadline) + running.compactMap(\.deadline)
        if let head = interactive.first, running.contains(where: { $0.priority == .background }) {
            times.append(head.waitingSince + policy.preemptAfter)
        }
        if let head = background.first, !running.contains(where: { $0.priority == .background }) {
            times.append(head.waitingSince + policy.starvationAfter)
        }
        return times.min()
    }

    /// Seconds until a place in the queue is likely to free up: the mean time a generation
    /// holds a place divided by the places, rounded up, between 1 and 60.
    var retryAfterSeconds: Int {
        let mean = meanService ?? .seconds(4)
        let seconds = (mean / policy.maxActiveSequences).inSeconds.rounded(.up)
        return Int(min(max(seconds, 1), 60))
    }

    // MARK: Rules

    private func isStarved(_ head: Waiter, at now: Instant) -> Bool {
        !running.contains { $0.priority == .background } && now - head.waitingSince >= policy.starvationAfter
    }

    private func ordered(at now: Instant) -> [Waiter] {
        if let head = background.first, isStarved(head, at: now) {
            return [head] + interactive + background.dropFirst()
        }
        return interactive + background
    }

    private mutating func popNext(at now: Instant) -> Waiter? {
        if let head = background.first, isStarved(head, at: now) { return background.removeFirst() }
        if !interactive.isEmpty { return interactive.removeFirst() }
        if !background.isEmpty { return background.removeFirst() }
        return nil
    }

    /// The index of the running background generation to park, when an interactive waiter is
    /// overdue and no place is free: the one that has run longest since it got its place.
    private func preemptionVictim(at now: Instant) -> Int? {
        guard running.count >= policy.maxActiveSequences, let head = interactive.first,
            now - head.waitingSince >= policy.preemptAfter
        else { return nil }
        let candidates = running.indices.filter {
            running[$0].priority == .background && running[$0].steps >= policy.minimumStepsBeforePreemption
        }
        return candidates.max { running[$0].steps < running[$1].steps }
    }

    private mutating func recordService(_ d: Duration) {
        // Smoothed so one unusually long or short generation moves the estimate only a little.
        meanService = meanService.map { $0 * 0.8 + d * 0.2 } ?? d
    }
}
