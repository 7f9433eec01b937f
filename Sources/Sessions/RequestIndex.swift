/// Which session each request id belongs to, for `POST /v1/requests/{id}/cancel`. Bounded: a
/// request is indexed from its admission until it ends, then kept among the `endedCapacity` most
/// recently ended (so a late cancel still answers "already finished"), then forgotten. It used to
/// hold every request id ever seen, including every one in every transcript at start-up.
///
/// Ids are scoped by owner (the API key's digest; nil without keys): clients choose their ids
/// (`X-Request-Id`), so one namespace for everybody would let a key take an id first and make
/// another key's cancel of its own request answer 404. Each owner has its own namespace.
struct RequestIndex: Sendable {
    /// A request id within its owner's namespace.
    struct Key: Hashable, Sendable {
        let owner: String?
        let id: String
    }

    let endedCapacity: Int
    private(set) var live: [Key: String] = [:]
    private var ended: [Key: String] = [:]
    private var endedOrder: [Key] = []
    private var endedHead = 0

    init(endedCapacity: Int) { self.endedCapacity = endedCapacity }

    var count: Int { live.count + ended.count }

    func session(for requestID: String, owner: String?) -> String? {
        let key = Key(owner: owner, id: requestID)
        return live[key] ?? ended[key]
    }

    /// Indexes a request being admitted; false (and nothing changes) if the owner has this id live already.
    mutating func admitted(_ requestID: String, owner: String?, session: String) -> Bool {
        let key = Key(owner: owner, id: requestID)
        guard live[key] == nil else { return false }
        ended[key] = nil
        live[key] = session
        return true
    }

    /// A request whose admission failed: it was never live.
    mutating func refused(_ requestID: String, owner: String?) { live[Key(owner: owner, id: requestID)] = nil }

    /// The request ended (or was never admitted): it moves to the bounded recent list.
    mutating func ended(_ requestID: String, owner: String?) {
        let key = Key(owner: owner, id: requestID)
        guard let session = live.removeValue(forKey: key) else { return }
        guard endedCapacity > 0 else { return }
        ended[key] = session
        endedOrder.append(key)
        while endedOrder.count - endedHead > endedCapacity {
            let oldest = endedOrder[endedHead]
            endedHead += 1
            // A re-admitted id may have left `endedOrder` stale; only forget it if it is still ended.
            if live[oldest] == nil { ended[oldest] = nil }
        }
        // Compact now and then so the order array stays O(capacity).
        if endedHead > endedCapacity {
            endedOrder.removeFirst(endedHead)
            endedHead = 0
        }
    }

    mutating func removeSession(_ session: String) {
        live = live.filter { $0.value != session }
        ended = ended.filter { $0.value != session }
        endedOrder = endedOrder[endedHead...].filter { ended[$0] != nil }
        endedHead = 0
    }
}
