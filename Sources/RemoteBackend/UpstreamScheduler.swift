import Engine
import GenerationVocabulary

/// Which upstream runs each generation and which generations wait, as pure state: every change
/// returns what the driver must do, so the rules are tested without sockets or threads.
///
/// Rules:
/// - An upstream can take a generation when it is up and runs fewer than its `maxActive`.
/// - Among those, the choice is smooth weighted round robin (as NGINX does it): each eligible
///   upstream's running score grows by its weight, the highest score is chosen and loses the sum
///   of the eligible weights. Over any run of picks with the same eligible set, each upstream gets
///   its share of `weight / Σ weights` to within one pick, spread out rather than in bursts.
/// - A new generation runs at once when one can take it and nobody waits; otherwise it waits,
///   unless `maxQueue` already wait: then it is refused with a `Retry-After` estimate.
///   Interactive waiters go before background ones (no preemption: a remote generation cannot
///   be parked); within each, tenants share places fairly as in the engine's queue
///   (`TenantRotation`: fewest places held, then placed least recently, then first come first
///   served). Waiters hear their position.
/// - When every upstream is down a new generation is refused at once (`unavailable`), and the
///   waiters are told so when the last one goes down.
/// - A generation whose upstream was unreachable may move to another one at once (`retarget`),
///   ahead of the waiters: it already held a place.
struct UpstreamScheduler<ID: Hashable & Sendable>: Sendable {
    struct Upstream: Sendable, Equatable {
        var weight: Int
        var maxActive: Int
        var active = 0
        var up = true
        var score = 0
    }

    enum Decision: Sendable, Equatable {
        case assigned(upstream: Int)
        case queued(position: Int)
        case refused(queueLength: Int, retryAfterSeconds: Int)
        /// Every upstream is down.
        case unavailable
    }

    enum Action: Sendable, Equatable {
        /// The waiter `ID` runs on this upstream now (its place is taken).
        case assign(ID, upstream: Int)
        /// The waiter's place in the queue is now `position` (1 is next).
        case position(ID, Int)
        /// Every upstream went down: the waiter leaves the queue.
        case unavailable(ID)
    }

    private struct Waiter: Sendable {
        var id: ID
        var tenant: String
        var lastPosition: Int?
    }

    private(set) var upstreams: [Upstream]
    let maxQueue: Int
    private var interactive: [Waiter] = []
    private var background: [Waiter] = []
    /// How long a generation holds a place, smoothed; nil until one has finished.
    private var meanService: Duration?
    /// Places held and last given, by tenant: which waiter goes next within a class.
    private var rotation = TenantRotation()

    init(upstreams: [(weight: Int, maxActive: Int)], maxQueue: Int) {
        self.upstreams = upstreams.map { Upstream(weight: max(1, $0.weight), maxActive: max(1, $0.maxActive)) }
        self.maxQueue = max(0, maxQueue)
    }

    var waitingCount: Int { interactive.count + background.count }
    var runningCount: Int { upstreams.reduce(0) { $0 + $1.active } }
    var anyUp: Bool { upstreams.contains { $0.up } }

    /// A new generation: where it runs, or its place in the queue; the actions are the other
    /// waiters' new positions (an interactive one goes ahead of background ones).
    mutating func submit(_ id: ID, priority: GenerationPriority, tenant: String = "") -> (Decision, [Action]) {
        guard anyUp else { return (.unavailable, []) }
        if waitingCount == 0, let i = pick(excluding: []) {
            rotation.placed(tenant)
            return (.assigned(upstream: i), [])
        }
        guard waitingCount < maxQueue else {
            return (.refused(queueLength: waitingCount, retryAfterSeconds: retryAfterSeconds), [])
        }
        let waiter = Waiter(id: id, tenant: tenant, lastPosition: nil)
        switch priority {
        case .interactive: interactive.append(waiter)
        case .background: background.append(waiter)
        }
        var others: [Action] = []
        var mine = 0
        for action in positions() {
            if case .position(id, let p) = action { mine = p } else { others.append(action) }
        }
        return (.queued(position: mine), others)
    }

    /// Moves a running generation of `tenant` off `upstream` (it was unreachable) to another one
    /// that can take it now, if any; the old place is freed either way (and the tenant's, if it
    /// found none: the generation ends).
    mutating func retarget(from upstream: Int, held: Duration, tenant: String = "") -> (Int?, [Action]) {
        let next = pick(excluding: [upstream])
        if next == nil { rotation.released(tenant, stillWaiting: hasWaiters(tenant)) }
        return (next, free(upstream, held: held))
    }

    /// A generation of `tenant` on `upstream` ended after holding its place for `held`.
    mutating func release(_ upstream: Int, held: Duration, tenant: String = "") -> [Action] {
        rotation.released(tenant, stillWaiting: hasWaiters(tenant))
        return free(upstream, held: held)
    }

    private mutating func free(_ upstream: Int, held: Duration) -> [Action] {
        upstreams[upstream].active -= 1
        // Smoothed so one unusually long or short generation moves the estimate only a little.
        meanService = meanService.map { $0 * 0.8 + held * 0.2 } ?? held
        return admit()
    }

    /// The health checks marked `upstream` up or down.
    mutating func setUp(_ upstream: Int, _ up: Bool) -> [Action] {
        upstreams[upstream].up = up
        upstreams[upstream].score = 0
        if up { return admit() }
        guard !anyUp else { return [] }
        return removeAllWaiting().map { .unavailable($0) }
    }

    /// Takes a waiter out of the queue (it was cancelled or its deadline passed). Nil when it was
    /// not waiting; else the positions that changed.
    mutating func remove(_ id: ID) -> [Action]? {
        let waiter: Waiter
        if let i = interactive.firstIndex(where: { $0.id == id }) {
            waiter = interactive.remove(at: i)
        } else if let i = background.firstIndex(where: { $0.id == id }) {
            waiter = background.remove(at: i)
        } else {
            return nil
        }
        if !hasWaiters(waiter.tenant) { rotation.stoppedWaiting(waiter.tenant) }
        return positions()
    }

    /// Takes every waiter out of the queue (shutdown); returns their ids.
    mutating func removeAllWaiting() -> [ID] {
        let all = interactive + background
        interactive.removeAll()
        background.removeAll()
        for waiter in all { rotation.stoppedWaiting(waiter.tenant) }
        return all.map(\.id)
    }

    /// Seconds until a place is likely to free up: the mean time a generation holds a place
    /// divided by the places of the upstreams that are up, rounded up, between 1 and 60.
    var retryAfterSeconds: Int {
        let places = max(1, upstreams.filter(\.up).reduce(0) { $0 + $1.maxActive })
        let seconds = ((meanService ?? .seconds(4)) / places).inSeconds.rounded(.up)
        return Int(min(max(seconds, 1), 60))
    }

    // MARK: Rules

    /// Smooth weighted round robin over the upstreams that can take one more; takes the place.
    private mutating func pick(excluding: Set<Int>) -> Int? {
        var best: Int?
        var total = 0
        for i in upstreams.indices
        where upstreams[i].up && upstreams[i].active < upstreams[i].maxActive && !excluding.contains(i) {
            upstreams[i].score += upstreams[i].weight
            total += upstreams[i].weight
            if best.map({ upstreams[i].score > upstreams[$0].score }) ?? true { best = i }
        }
        guard let best else { return nil }
        upstreams[best].score -= total
        upstreams[best].active += 1
        return best
    }

    /// Gives free places to waiters, in order; then reports positions that changed.
    private mutating func admit() -> [Action] {
        var actions: [Action] = []
        while waitingCount > 0, let i = pick(excluding: []) {
            let waiter: Waiter
            if let next = rotation.next(among: interactive.lazy.map(\.tenant)) {
                waiter = interactive.remove(at: next)
            } else {
                waiter = background.remove(at: rotation.next(among: background.lazy.map(\.tenant))!)
            }
            rotation.placed(waiter.tenant)
            actions.append(.assign(waiter.id, upstream: i))
        }
        return actions + positions()
    }

    private func hasWaiters(_ tenant: String) -> Bool {
        interactive.contains { $0.tenant == tenant } || background.contains { $0.tenant == tenant }
    }

    /// Every waiter's place in the fair order (interactive class first), reported when it changed.
    private mutating func positions() -> [Action] {
        var actions: [Action] = []
        var position = 0
        var simulated = rotation
        for i in simulated.order(of: interactive.map(\.tenant)) {
            Self.notify(&interactive[i], &position, into: &actions)
        }
        for i in simulated.order(of: background.map(\.tenant)) {
            Self.notify(&background[i], &position, into: &actions)
        }
        return actions
    }

    private static func notify(_ waiter: inout Waiter, _ position: inout Int, into actions: inout [Action]) {
        position += 1
        if waiter.lastPosition != position {
            waiter.lastPosition = position
            actions.append(.position(waiter.id, position))
        }
    }
}
