/// Every open connection's stage, its absolute deadline and whether it has been trusted, as pure
/// state: each event returns the connections the caller must close. No I/O and no clock of its
/// own: the caller passes `now` from the server's time source.
///
/// - A connection waits for a request's head (line and headers) until `headerTimeout` after it
///   opened; on a kept-alive connection, until `idleAllowance + headerTimeout` after the previous
///   request completed (libmicrohttpd's own idle timeout still closes a silent one earlier).
/// - Once the head is in, the body must be complete by `bodyTimeout` after the head.
/// - While the request is served (its Task runs, its answer is written) there is no deadline.
///
/// Unlike libmicrohttpd's idle timeout, which any byte resets, these deadlines are absolute: a
/// client sending one byte every few seconds is closed at the deadline all the same.
///
/// A connection becomes trusted when the head gate vouches for it (a valid API key, or any
/// complete head when keys are off), and stays trusted. Untrusted connections still receiving a
/// request (waiting for a head, or sending a body) may hold at most `untrustedPlaces`; when one
/// more opens, the oldest of them is closed, so the last `connection_limit - untrustedPlaces`
/// places stay free for trusted clients however many half-sent connections arrive.
struct ConnectionLedger {
    struct Limits: Equatable {
        var headerTimeout: Duration
        var bodyTimeout: Duration
        /// Extra time a kept-alive connection may stay silent before its next request's head.
        var idleAllowance: Duration
        /// Most untrusted connections receiving a request at once.
        var untrustedPlaces: Int
    }

    enum Stage: Equatable {
        case awaitingHead, receivingBody, serving
    }

    enum Reason: String, Equatable, Sendable {
        case headerTimeout = "header_timeout"
        case bodyTimeout = "body_timeout"
        case reserve
    }

    enum Action: Equatable {
        case close(UInt64, Reason)
    }

    struct Entry: Equatable {
        let id: UInt64
        /// Opening order (ids are the caller's; this is ours).
        let order: UInt64
        var stage: Stage
        var deadline: ContinuousClock.Instant?
        var trusted = false
        /// A close was asked for; it no longer counts and is not closed twice.
        var closing = false

        var receivingUntrusted: Bool { !trusted && !closing && stage != .serving }
    }

    let limits: Limits
    private(set) var entries: [UInt64: Entry] = [:]
    private var nextOrder: UInt64 = 0

    init(limits: Limits) { self.limits = limits }

    /// Untrusted connections still receiving a request (the ones the reserve keeps in bounds).
    var untrustedReceiving: Int { entries.values.filter(\.receivingUntrusted).count }

    /// A connection was accepted. Returns the oldest untrusted one to close when there are now
    /// more than `untrustedPlaces` (never the new one unless it is the only candidate).
    mutating func opened(_ id: UInt64, now: ContinuousClock.Instant) -> [Action] {
        nextOrder += 1
        entries[id] = Entry(id: id, order: nextOrder, stage: .awaitingHead, deadline: now + limits.headerTimeout)
        var actions: [Action] = []
        while untrustedReceiving > limits.untrustedPlaces {
            guard let oldest = entries.values.filter(\.receivingUntrusted).min(by: { $0.order < $1.order }) else {
                break
            }
            entries[oldest.id]?.closing = true
            actions.append(.close(oldest.id, .reserve))
        }
        return actions
    }

    /// The request's head is complete and the gate has looked at it: the body's deadline starts.
    mutating func headReceived(_ id: UInt64, trusted: Bool, now: ContinuousClock.Instant) {
        guard var e = entries[id], !e.closing else { return }
        if trusted { e.trusted = true }
        e.stage = .receivingBody
        e.deadline = now + limits.bodyTimeout
        entries[id] = e
    }

    /// The request is complete (or was answered early): no deadline while it is served.
    mutating func serving(_ id: UInt64) {
        guard var e = entries[id], !e.closing else { return }
        e.stage = .serving
        e.deadline = nil
        entries[id] = e
    }

    /// The request completed; a kept-alive connection waits for the next head.
    mutating func requestCompleted(_ id: UInt64, now: ContinuousClock.Instant) {
        guard var e = entries[id], !e.closing else { return }
        e.stage = .awaitingHead
        e.deadline = now + limits.idleAllowance + limits.headerTimeout
        entries[id] = e
    }

    /// libmicrohttpd closed the connection: forget it.
    mutating func closed(_ id: UInt64) {
        entries[id] = nil
    }

    /// The earliest deadline of a connection not yet being closed.
    var nextDeadline: ContinuousClock.Instant? {
        entries.values.filter { !$0.closing }.compactMap(\.deadline).min()
    }

    /// Every connection whose deadline has passed, to close now.
    mutating func expire(now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        for e in entries.values.sorted(by: { $0.order < $1.order }) where !e.closing {
            guard let deadline = e.deadline, deadline <= now else { continue }
            entries[e.id]?.closing = true
            actions.append(.close(e.id, e.stage == .receivingBody ? .bodyTimeout : .headerTimeout))
        }
        return actions
    }
}
