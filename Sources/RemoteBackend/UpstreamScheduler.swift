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
///   Interactive waiters go before background ones, first come first served within each (no
///   preemption: a remote generation cannot be parked). Waiters hear their position.
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
        var lastPosition: Int?
    }

    private(set) var upstreams: [Upstream]
    let maxQueue: Int
    private var interactive: [Waiter] = []
    private var background: [Waiter] = []
    /// How long a generation holds a place, smoothed; nil until one has finished.
    private var meanService: Duration?

    init(upstreams: [(weight: Int, maxActive: Int)], maxQueue: Int) {
        self.upstreams = upstreams.map { Upstream(weight: max(1, $0.weight), maxActive: max(1, $0.maxActive)) }
        self.maxQueue = max(0, maxQueue)
    }

    var waitingCount: Int { interactive.count + background.count }
    var runningCount: Int { upstreams.reduce(0) { $0 + $1.active } }
    var anyUp: Bool { upstreams.contains { $0.up } }

    /// A new generation: where it runs, or its place in the queue; the actions are the other
    /// waiters' new positions (an interactive one goes ahead of background ones).
    mutating func submit(_ id: ID, priority: GenerationPriority) -> (Decision, [Action]) {
        guard anyUp else { return (.unavailable, []) }
        if waitingCount == 0, let i = pick(excluding: []) { return (.assigned(upstream: i), []) }
        guard waitingCount < maxQueue else {
            return (.refused(queueLength: waitingCount, retryAfterSeconds: retryAfterSeconds), [])
        }
        let waiter = Waiter(id: id, lastPosition: nil)
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

    /// Moves a running generation off `upstream` (it was unreachable) to another one that can
    /// take it now, if any; the old place is freed either way.
    mutating func retarget(from upstream: Int, held: Duration) -> (Int?, [Action]) {
        let next = pick(excluding: [upstream])
        return (next, release(upstream, held: held))
    }

    /// A generation on `upstream` ended after holding its place for `held`.
    mutating func release(_ upstream: Int, held: Duration) -> [Action] {
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
        defer {
            interactive.removeAll()
            background.removeAll()
        }
        return (interactive + background).map { .unavailable($0.id) }
    }

    /// Takes a waiter out of the queue (it was cancelled or its deadline passed). Nil when it was
    /// not waiting; else the positions that changed.
    mutating func remove(_ id: ID) -> [Action]? {
        if let i = interactive.firstIndex(where: { $0.id == id }) {
            interactive.remove(at: i)
        } else if let i = background.firstIndex(where: { $0.id == id }) {
            background.remove(at: i)
        } else {
            return nil
        }
        return positions()
    }

    /// Takes every waiter out of the queue (shutdown); returns their ids.
    mutating func removeAllWaiting() -> [ID] {
        defer {
            interactive.removeAll()
            background.removeAll()
        }
        return (interactive + background).map(\.id)
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
            let waiter = interactive.isEmpty ? background.removeFirst() : interactive.removeFirst()
            actions.append(.assign(waiter.id, upstream: i))
        }
        return actions + positions()
    }

    private mutating func positions() -> [Action] {
        var actions: [Action] = []
        var position = 0
        for i in interactive.indices { Self.notify(&interactive[i], &position, into: &actions) }
        for i in background.indices { Self.notify(&background[i], &position, into: &actions) }
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
