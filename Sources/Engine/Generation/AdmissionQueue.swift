import Telemetry

/// Which generations the engine steps and which wait, as pure state: every change returns what
/// the worker must do, and time comes in as an argument, so the rules are tested without
/// threads or clocks.
///
/// Rules:
/// - At most `maxActiveSequences` generations run. A new one runs at once when there is room
///   and nobody waits; otherwise it waits, unless `maxQueue` already wait: then it is refused
///   (with a `Retry-After` estimate).
/// - Waiting order: interactive before background. Within each, tenants share places fairly
///   (`TenantRotation`): the next place goes to the tenant holding the fewest places, then to the
///   one placed least recently, then first come first served; a tenant's own waiters keep their
///   order. With one tenant (no API keys) that is first come, first served.
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
        /// Whose work it is (opaque): fair shares are kept between tenants.
        var tenant: String
        var deadline: Instant?
        var waitingSince: Instant
        /// Time it already held a place (a parked generation), for the mean service time.
        var served: Duration = .zero
        var lastNotifiedPosition: Int?
    }

    struct Running: Sendable, Equatable {
        var id: ID
        var priority: GenerationPriority
        var tenant: String
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
    /// Places held and last given, by tenant: who goes next within a class.
    private var rotation = TenantRotation()
    /// The waiting order may have changed since positions were last told (a waiter came or went,
    /// a place was taken or freed); `update` recomputes them only then, or when the starvation
    /// guard's head changes, so a round with nothing new allocates nothing.
    private var reordered = false
    private var starvedHeadWhenTold = false

    init(policy: AdmissionPolicy) { self.policy = policy }

    var waitingCount: Int { interactive.count + background.count }
    var runningCount: Int { running.count }
    var isEmpty: Bool { running.isEmpty && waitingCount == 0 }

    func isRunning(_ id: ID) -> Bool { running.contains { $0.id == id } }
    func isWaiting(_ id: ID) -> Bool { (interactive + background).contains { $0.id == id } }

    /// Generations of `tenant` holding a place.
    func runningCount(of tenant: String) -> Int { rotation.holding(tenant) }

    /// Waiting ids in the order they will be given a place, as of `now`.
    func order(at now: Instant) -> [ID] { ordered(at: now).map(\.id) }

    // MARK: Changes

    mutating func submit(
        _ id: ID, priority: GenerationPriority, tenant: String = "", deadline: Instant?, now: Instant
    ) -> SubmitDecision {
        if running.count < policy.maxActiveSequences && waitingCount == 0 {
            running.append(
                Running(
                    id: id, priority: priority, tenant: tenant, deadline: deadline, admittedAt: now, served: .zero))
            rotation.placed(tenant)
            return .admitted
        }
        guard waitingCount < policy.maxQueue else {
            return .refused(queueLength: waitingCount, retryAfterSeconds: retryAfterSeconds)
        }
        let waiter = Waiter(id: id, priority: priority, tenant: tenant, deadline: deadline, waitingSince: now)
        switch priority {
        case .interactive: interactive.append(waiter)
        case .background: background.append(waiter)
        }
        reordered = true
        return .queued(position: order(at: now).firstIndex(of: id)! + 1)
    }

    /// Takes a waiter out of the queue (it was cancelled). False when it is not waiting: a
    /// running generation is stopped by the worker and reported with `finished`.
    mutating func remove(_ id: ID) -> Bool {
        let waiter: Waiter
        if let i = interactive.firstIndex(where: { $0.id == id }) {
            waiter = interactive.remove(at: i)
        } else if let i = background.firstIndex(where: { $0.id == id }) {
            waiter = background.remove(at: i)
        } else {
            return false
        }
        stoppedWaiting(waiter.tenant)
        return true
    }

    /// Takes every waiter out of the queue (shutdown); returns their ids.
    mutating func removeAllWaiting() -> [ID] {
        let all = interactive + background
        interactive.removeAll()
        background.removeAll()
        for waiter in all { stoppedWaiting(waiter.tenant) }
        return all.map(\.id)
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
        rotation.released(r.tenant, stillWaiting: hasWaiters(r.tenant))
        reordered = true
        recordService(r.served + (now - r.admittedAt))
        return true
    }

    /// Applies deadlines, preemption and admissions as of `now`; returns what the worker must
    /// do, in order (parks before the admissions that take their places).
    mutating func update(now: Instant) -> [Action] {
        // Runs every engine round: it builds no array unless it has something to report.
        var actions: [Action] = []
        let expiredInteractive = Self.expire(&interactive, now: now, into: &actions)
        let expiredBackground = Self.expire(&background, now: now, into: &actions)
        if expiredInteractive || expiredBackground {
            reordered = true
            rotation.forgetIdle(waiting: Set((interactive + background).map { $0.tenant }))
        }
        for r in running where r.deadline.map({ $0 <= now }) ?? false {
            finished(r.id, now: now)
            actions.append(.expireActive(r.id))
        }
        while true {
            while running.count < policy.maxActiveSequences, let next = popNext(at: now) {
                running.append(
                    Running(
                        id: next.id, priority: next.priority, tenant: next.tenant, deadline: next.deadline,
                        admittedAt: now, served: next.served))
                rotation.placed(next.tenant)
                reordered = true
                actions.append(.admit(next.id))
            }
            guard let victim = preemptionVictim(at: now) else { break }
            let r = running.remove(at: victim)
            rotation.released(r.tenant, stillWaiting: true)
            reordered = true
            background.insert(
                Waiter(
                    id: r.id, priority: r.priority, tenant: r.tenant, deadline: r.deadline, waitingSince: now,
                    served: r.served + (now - r.admittedAt)),
                at: 0)
            actions.append(.park(r.id))
        }
        // Positions, only when the order may have changed: a round with nothing new builds nothing.
        let starvedHead = background.first.map { isStarved($0, at: now) } ?? false
        if reordered || starvedHead != starvedHeadWhenTold {
            reordered = false
            starvedHeadWhenTold = starvedHead
            var position = 0
            for (lane, i) in orderedPlaces(at: now) {
                switch lane {
                case .interactive: Self.notify(&interactive[i], &position, into: &actions)
                case .background: Self.notify(&background[i], &position, into: &actions)
                }
            }
        }
        return actions
    }

    /// Takes the waiters past their deadlines out of `list`, in order; true if there were any.
    /// Static over one array (no key path: a generic type's is made at run time, every round).
    private static func expire(_ list: inout [Waiter], now: Instant, into actions: inout [Action]) -> Bool {
        var expired = false
        var i = 0
        while i < list.count {
            if let deadline = list[i].deadline, deadline <= now {
                actions.append(.expireWaiting(list[i].id))
                list.remove(at: i)
                expired = true
            } else {
                i += 1
            }
        }
        return expired
    }

    private func hasWaiters(_ tenant: String) -> Bool {
        interactive.contains { $0.tenant == tenant } || background.contains { $0.tenant == tenant }
    }

    /// A waiter of `tenant` left without a place.
    private mutating func stoppedWaiting(_ tenant: String) {
        reordered = true
        if !hasWaiters(tenant) { rotation.stoppedWaiting(tenant) }
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

    private enum Lane { case interactive, background }

    /// The waiters in the order they will be given places, as (class, index) pairs: a starved
    /// background head first, then the interactive class, then the background class, each in
    /// its fair order (each placing counting for the ones after it).
    private func orderedPlaces(at now: Instant) -> [(Lane, Int)] {
        var simulated = rotation
        var result: [(Lane, Int)] = []
        var backgroundTenants = background.map { $0.tenant }
        var backgroundIndices = Array(background.indices)
        if let head = background.first, isStarved(head, at: now), let j = simulated.next(among: backgroundTenants) {
            result.append((.background, j))
            simulated.placed(backgroundTenants.remove(at: j))
            backgroundIndices.remove(at: j)
        }
        result += simulated.order(of: interactive.map { $0.tenant }).map { (.interactive, $0) }
        result += simulated.order(of: backgroundTenants).map { (.background, backgroundIndices[$0]) }
        return result
    }

    private func ordered(at now: Instant) -> [Waiter] {
        orderedPlaces(at: now).map { lane, i in lane == .interactive ? interactive[i] : background[i] }
    }

    /// The next waiter to get a place: the starved background one (the guard), else the
    /// interactive class, else the background class; within a class the fair choice.
    private mutating func popNext(at now: Instant) -> Waiter? {
        if let head = background.first, isStarved(head, at: now),
            let i = rotation.next(among: background.lazy.map { $0.tenant })
        {
            return background.remove(at: i)
        }
        if let i = rotation.next(among: interactive.lazy.map { $0.tenant }) { return interactive.remove(at: i) }
        if let i = rotation.next(among: background.lazy.map { $0.tenant }) { return background.remove(at: i) }
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
