import Telemetry

/// Server-Sent Events wire format.
package enum SSEFormat {
    /// `event: NAME\nid: N\ndata: LINE\n…\n\n`; a data value with newlines becomes several `data:` lines.
    package static func encode(event: String, id: Int, data: String) -> [UInt8] {
        encodeData(data, prefix: "event: \(singleLine(event))\nid: \(id)\n")
    }

    /// `data: LINE\n…\n\n` alone: no `event:` or `id:` field, as OpenAI-style streams expect.
    static func encode(data: String) -> [UInt8] {
        encodeData(data, prefix: "")
    }

    private static func encodeData(_ data: String, prefix: String) -> [UInt8] {
        var out = prefix
        var line = ""
        var sawCR = false
        for scalar in data.unicodeScalars {
            switch scalar {
            case "\r":
                out += "data: \(line)\n"
                line = ""
                sawCR = true
                continue
            case "\n":
                if !sawCR {
                    out += "data: \(line)\n"
                    line = ""
                }
            default:
                line.unicodeScalars.append(scalar)
            }
            sawCR = false
        }
        out += "data: \(line)\n\n"
        return Array(out.utf8)
    }

    static let heartbeat: [UInt8] = Array(": ping\n\n".utf8)

    /// Event names cannot contain line breaks; they would end the field.
    static func singleLine(_ s: String) -> String {
        String(s.unicodeScalars.filter { $0 != "\n" && $0 != "\r" }.map(Character.init))
    }
}

/// Pending SSE output for one stream: ordered events, at most one conflated snapshot,
/// and the bytes already formatted but not yet taken by the connection. Pure state, no I/O.
///
/// Memory stays bounded by (one snapshot + the ordered events + one read's worth) however slow
/// the client is, because a new snapshot replaces a pending one instead of queueing behind it.
struct SSEQueue {
    enum Item: Equatable {
        case event(name: String, data: String)
        case snapshot(name: String, data: String)
        /// A nameless, id-less event: only `data:` lines.
        case data(String)
        case heartbeat

        var estimatedBytes: Int {
            switch self {
            case .event(let n, let d), .snapshot(let n, let d): n.utf8.count + d.utf8.count + 24
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

/// The writing end of one SSE response, handed to the producer, which runs inside the
/// request's Task. Writes never block: output is queued and the connection is woken.
public final class EventStream: Sendable {
    let exchange: Exchange

    init(exchange: Exchange) { self.exchange = exchange }

    public var requestID: String { exchange.requestID }
    public var context: RequestContext { exchange.context }

    /// An event that is never dropped and keeps its order (queued, started, terminal…).
    public func send(event: String, data: String) {
        exchange.enqueue {
            $0.send(event: event, data: data)
            return false
        }
    }

    /// A bare `data: …` event (no `event:` or `id:` line), never dropped and kept in order with
    /// `send(event:data:)`. For wire formats such as OpenAI's that carry everything in `data`.
    public func send(data: String) {
        exchange.enqueue {
            $0.send(data: data)
            return false
        }
    }

    /// A snapshot of the state so far: replaces a pending, not-yet-written snapshot.
    public func sendSnapshot(event: String, data: String) {
        exchange.enqueue { $0.sendSnapshot(event: event, data: data) }
    }

    /// Bytes queued for this connection right now (formatted or not); for tests and diagnostics.
    var bufferedBytes: Int { exchange.sse { $0.bufferedBytes } }
    /// The most bytes ever queued for this connection.
    var peakBufferedBytes: Int { exchange.sse { $0.peakBufferedBytes } }
    /// Events accepted from the producer so far (including later-conflated snapshots).
    var eventsAccepted: Int { exchange.sse { $0.eventsAccepted } }
}
