import Telemetry

/// Pending SSE output for one stream: ordered events, at most one conflated snapshot,
/// and the bytes already formatted but not yet taken by the connection. Pure state, no I/O.
///
/// Memory stays bounded by (one snapshot + the ordered events + one read's worth) however slow
/// the client is, because a new snapshot replaces a pending one instead of queueing behind it.
struct SSEQueue {
    enum Item: Equatable {
        case event(name: String, data: String)
        /// An ordered event carrying its own id (a resumable stream's sequence number).
        case identified(name: String, data: String, id: Int)
        case snapshot(name: String, data: String)
        /// A nameless, id-less event: only `data:` lines.
        case data(String)
        case heartbeat

        var estimatedBytes: Int {
            switch self {
            case .event(let n, let d), .snapshot(let n, let d), .identified(let n, let d, _):
                n.utf8.count + d.utf8.count + 24
            case .data(let d): d.utf8.count + 8
            case .heartbeat: SSEFormat.heartbeat.count
            }
        }
    }

    enum ReadResult: Equatable {
        /// Up to `max` bytes; `events` is how many events were formatted for this read.
        case bytes([UInt8], events: Int)
        /// Nothing to send yet; the stream is still open.
        case empty
        /// Everything has been taken and the producer finished.
        case end
    }

    private(set) var pending: [Item] = []
    private var out: [UInt8] = []
    private var outOffset = 0
    private(set) var nextID = 1
    private(set) var finished = false
    private(set) var eventsAccepted = 0
    private(set) var peakBufferedBytes = 0

    var bufferedBytes: Int {
        (out.count - outOffset) + pending.reduce(0) { $0 + $1.estimatedBytes }
    }

    /// Appends an event that must be delivered in order. Ignored after `finish()`.
    mutating func send(event: String, data: String) {
        guard !finished else { return }
        pending.append(.event(name: event, data: data))
        eventsAccepted += 1
        notePeak()
    }

    /// Appends an ordered event whose `id:` is `id` rather than the next number: a resumable
    /// stream numbers its events itself, so a client's `Last-Event-ID` names one on any
    /// connection. Events after it without their own id continue from `id + 1`. Ignored after `finish()`.
    mutating func send(event: String, data: String, id: Int) {
        guard !finished else { return }
        pending.append(.identified(name: event, data: data, id: id))
        eventsAccepted += 1
        notePeak()
    }

    /// Appends a bare `data:` event that must be delivered in order; it takes no id.
    /// Ignored after `finish()`.
    mutating func send(data: String) {
        guard !finished else { return }
        pending.append(.data(data))
        eventsAccepted += 1
        notePeak()
    }

    /// Appends a snapshot, replacing a pending one. Returns true when one was dropped.
    @discardableResult
    mutating func sendSnapshot(event: String, data: String) -> Bool {
        guard !finished else { return false }
        var dropped = false
        if let index = pending.firstIndex(where: { if case .snapshot = $0 { true } else { false } }) {
            pending.remove(at: index)
            dropped = true
        }
        pending.append(.snapshot(name: event, data: data))
        eventsAccepted += 1
        notePeak()
        return dropped
    }

    mutating func heartbeat() {
        guard !finished else { return }
        pending.append(.heartbeat)
        notePeak()
    }

    /// The producer is done: what is pending is still delivered, then the stream ends.
    mutating func finish() { finished = true }

    /// Takes up to `max` bytes for the connection.
    mutating func read(max: Int) -> ReadResult {
        var events = 0
        if outOffset == out.count {
            out.removeAll(keepingCapacity: true)
            outOffset = 0
            // Format pending items lazily so ids are consecutive on the wire.
            while !pending.isEmpty && out.count < max {
                switch pending.removeFirst() {
                case .event(let name, let data), .snapshot(let name, let data):
                    out += SSEFormat.encode(event: name, id: nextID, data: data)
                    nextID += 1
                    events += 1
                case .identified(let name, let data, let id):
                    out += SSEFormat.encode(event: name, id: id, data: data)
                    nextID = id + 1
                    events += 1
                case .data(let data):
                    out += SSEFormat.encode(data: data)
                    events += 1
                case .heartbeat:
                    out += SSEFormat.heartbeat
                }
            }
        }
        if outOffset == out.count {
            return finished ? .end : .empty
        }
        let n = min(max, out.count - outOffset)
        let chunk = Array(out[outOffset..<(outOffset + n)])
        outOffset += n
        return .bytes(chunk, events: events)
    }

    private mutating func notePeak() {
        peakBufferedBytes = Swift.max(peakBufferedBytes, bufferedBytes)
    }
}
