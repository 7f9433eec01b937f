import Telemetry

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

    /// An ordered event whose SSE `id:` is `id` (a resumable stream's own sequence number, so a
    /// reconnect's `Last-Event-ID` names the same event whichever connection sent it).
    public func send(event: String, data: String, id: Int) {
        exchange.enqueue {
            $0.send(event: event, data: data, id: id)
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
