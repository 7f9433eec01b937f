/// Fair shares between tenants among the waiters of one priority class, as pure state: which
/// tenant's waiter is given the next free place. A tenant is an opaque string (the server's API
/// key owner; "" for everyone when there are no keys, which makes the order first come, first
/// served). Used by the engine's `AdmissionQueue` and by the remote backend's scheduler.
///
/// Rule: the next place goes to the tenant with the fewest generations holding a place; among
/// equals, to the one given a place least recently (never: first); among those, to the one whose
/// first waiter came first. Within a tenant, its waiters keep their order. So a tenant with many
/// waiters cannot keep another tenant's first request waiting for more than one free place,
/// and tenants that all wait share the places in turn.
package struct TenantRotation: Sendable, Equatable {
    /// Generations holding a place, by tenant (tenants with none are absent).
    private(set) var holding: [String: Int] = [:]
    /// When each tenant was last given a place (a number that only grows); absent: never, or
    /// forgotten because the tenant held and wanted nothing.
    private var lastPlaced: [String: UInt64] = [:]
    private var placements: UInt64 = 0

    package init() {}

    /// Generations of `tenant` holding a place.
    package func holding(_ tenant: String) -> Int { holding[tenant] ?? 0 }

    /// Lower goes first: fewest holding, then longest since its last place.
    private func rank(_ tenant: String) -> (Int, UInt64) { (holding[tenant] ?? 0, lastPlaced[tenant] ?? 0) }

    /// `tenant` was given a place (a new one or a parked one resumed).
    package mutating func placed(_ tenant: String) {
        placements += 1
        lastPlaced[tenant] = placements
        holding[tenant, default: 0] += 1
    }

    /// A generation of `tenant` gave its place back (it ended, was parked or expired while
    /// running). `stillWaiting`: the tenant has waiters; a tenant holding and wanting nothing
    /// is forgotten (it would rank as never placed when it comes back).
    package mutating func released(_ tenant: String, stillWaiting: Bool) {
        let n = (holding[tenant] ?? 1) - 1
        holding[tenant] = n > 0 ? n : nil
        if n <= 0 && !stillWaiting { lastPlaced[tenant] = nil }
    }

    /// A tenant's last waiter left without a place (cancelled, expired): forgotten if it holds none.
    package mutating func stoppedWaiting(_ tenant: String) {
        if holding[tenant] == nil { lastPlaced[tenant] = nil }
    }

    /// Forgets every tenant that holds no place and is not among `waiting` (after waiters left
    /// in bulk, as when deadlines pass).
    package mutating func forgetIdle(waiting: Set<String>) {
        lastPlaced = lastPlaced.filter { holding[$0.key] != nil || waiting.contains($0.key) }
    }

    /// The index of the waiter to place next, given the waiters' tenants in their queue order;
    /// nil when there are none. Allocates nothing.
    package func next<C: Collection>(among tenants: C) -> C.Index? where C.Element == String {
        var best: (index: C.Index, rank: (Int, UInt64))?
        for i in tenants.indices {
            let r = rank(tenants[i])
            // Strictly lower only: the first waiter of the best tenant, the earliest among equals.
            if best.map({ r < $0.rank }) ?? true { best = (i, r) }
        }
        return best?.index
    }

    /// The order in which `tenants` (the waiters' tenants in queue order) would be given places if
    /// nothing else changed, as indices into it; each placing counts for the ones after it, as it
    /// will (`self` is left as if all were placed: pass a copy).
    package mutating func order(of tenants: [String]) -> [Int] {
        // One lane per tenant, in order of its first waiter; each lane its waiters' indices.
        var laneOf: [String: Int] = [:]
        var lanes: [(tenant: String, indices: [Int], next: Int)] = []
        for (i, t) in tenants.enumerated() {
            if let l = laneOf[t] {
                lanes[l].indices.append(i)
            } else {
                laneOf[t] = lanes.count
                lanes.append((t, [i], 0))
            }
        }
        var result: [Int] = []
        result.reserveCapacity(tenants.count)
        while result.count < tenants.count {
            var best: (lane: Int, rank: (Int, UInt64), head: Int)?
            for l in lanes.indices where lanes[l].next < lanes[l].indices.count {
                let r = rank(lanes[l].tenant)
                let head = lanes[l].indices[lanes[l].next]
                if best.map({ (r.0, r.1, head) < ($0.rank.0, $0.rank.1, $0.head) }) ?? true { best = (l, r, head) }
            }
            guard let b = best else { break }
            result.append(b.head)
            lanes[b.lane].next += 1
            placed(lanes[b.lane].tenant)
        }
        return result
    }
}
