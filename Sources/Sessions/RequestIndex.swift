/// Which session each request id belongs to, for `POST /v1/requests/{id}/cancel`. Bounded: a
/// request is indexed from its admission until it ends, then kept among the `endedCapacity` most
/// recently ended (so a late cancel still answers "already finished"), then forgotten. It used to
/// hold every request id ever seen, including every one in every transcript at start-up.
struct RequestIndex: Sendable {
    let endedCapacity: Int
    private(set) var live: [String: String] = [:]
    private var ended: [String: String] = [:]
    private var endedOrder: [String] = []
    private var endedHead = 0

    init(endedCapacity: Int) { self.endedCapacity = endedCapacity }

    var count: Int { live.count + ended.count }

    func session(for requestID: String) -> String? { live[requestID] ?? ended[requestID] }

    /// Indexes a request being admitted; false (and nothing changes) if the id is live already.
    mutating func admitted(_ requestID: String, session: String) -> Bool {
        guard live[requestID] == nil else { return false }
        ended[requestID] = nil
        live[requestID] = session
        return true
    }

    /// A request whose admission failed: it was never live.
    mutating func refused(_ requestID: String) { live[requestID] = nil }

    /// The request ended (or was never admitted): it moves to the bounded recent list.
    mutating func ended(_ requestID: String) {
        guard let session = live.removeValue(forKey: requestID) else { return }
        guard endedCapacity > 0 else { return }
        ended[requestID] = session
        endedOrder.append(requestID)
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
