import CMicroHTTPD
import Foundation
import Glibc
import Telemetry
import Timekeeping

/// Keeps the `ConnectionLedger` and carries out what it decides: a thread of its own waits (by
/// the server's time source) for the next deadline, and closing a connection is
/// `shutdown(fd, SHUT_RDWR)`, which libmicrohttpd's polling thread sees at once as the peer's
/// end of stream and answers by closing the connection. Why a sweep and not libmicrohttpd's
/// `MHD_OPTION_CONNECTION_TIMEOUT`: that timeout counts silence, which any byte resets, and its
/// per-connection form can only be set from the access handler, which is first called once the
/// headers are complete; the header deadline has to be enforced from outside.
///
/// Every method runs under one lock, including the `shutdown` calls: libmicrohttpd reports a
/// connection closed (`closed`) before it closes the socket, so a socket is never shut down
/// after its descriptor could have been reused.
final class ConnectionGuard: @unchecked Sendable {
    struct Peer {
        let fd: Int32
        let remote: String
    }

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var ledger: ConnectionLedger
    private var peers: [UInt64: Peer] = [:]
    private var running = false
    private var stopped = false

    let clock: any TimeSource
    let logger: Logger
    let closedEarly: @Sendable (ConnectionLedger.Reason) -> Void

    init(
        limits: ConnectionLedger.Limits, clock: any TimeSource, logger: Logger,
        closedEarly: @escaping @Sendable (ConnectionLedger.Reason) -> Void
    ) {
        ledger = ConnectionLedger(limits: limits)
        self.clock = clock
        self.logger = logger
        self.closedEarly = closedEarly
        // A manual time source moved by a test: the sweeper looks at the deadlines again.
        clock.onAdvance { [weak self] in self?.wake() }
    }

    /// Starts the sweeper thread (once).
    func start() {
        let begin: Bool = locked {
            guard !running && !stopped else { return false }
            running = true
            return true
        }
        guard begin else { return }
        let thread = Thread { [self] in self.sweep() }
        thread.name = "inferd-connection-deadlines"
        thread.start()
    }

    /// Ends the sweeper thread.
    func stop() {
        locked {
            stopped = true
            running = false
        }
        wake()
    }

    // MARK: events (libmicrohttpd's thread)

    func opened(_ id: UInt64, fd: Int32, remote: String) {
        locked {
            peers[id] = Peer(fd: fd, remote: remote)
            perform(ledger.opened(id, now: clock.now))
        }
        wake()
    }

    func headReceived(_ id: UInt64, trusted: Bool) {
        locked { ledger.headReceived(id, trusted: trusted, now: clock.now) }
        wake()
    }

    func serving(_ id: UInt64) { locked { ledger.serving(id) } }

    func requestCompleted(_ id: UInt64) {
        locked { ledger.requestCompleted(id, now: clock.now) }
        wake()
    }

    func closed(_ id: UInt64) {
        locked {
            ledger.closed(id)
            peers[id] = nil
        }
    }

    /// The connections waiting for a request's head: id, socket and peer.
    func awaitingHead() -> [(UInt64, Int32, String)] {
        locked {
            ledger.entries.values.filter { $0.stage == .awaitingHead && !$0.closing }.compactMap { e in
                peers[e.id].map { (e.id, $0.fd, $0.remote) }
            }
        }
    }

    // MARK: introspection (tests)

    var untrustedReceiving: Int { locked { ledger.untrustedReceiving } }
    var tracked: Int { locked { ledger.entries.count } }
    /// Connections whose head is in and whose body is still arriving.
    var receivingBody: Int { locked { ledger.entries.values.filter { $0.stage == .receivingBody }.count } }

    // MARK: sweeping

    private func sweep() {
        condition.lock()
        while running {
            perform(ledger.expire(now: clock.now))
            if let next = ledger.nextDeadline {
                _ = condition.wait(until: Date(timeIntervalSinceNow: clock.timeLeft(until: next).inSeconds))
            } else {
                condition.wait()
            }
        }
        condition.unlock()
    }

    /// Under the lock.
    private func perform(_ actions: [ConnectionLedger.Action]) {
        for case .close(let id, let reason) in actions {
            guard let peer = peers[id] else { continue }
            // Counted and logged before the close, so whoever sees the close also sees the count.
            closedEarly(reason)
            logger.info("connection closed early", ["reason": reason.rawValue, "remote": peer.remote])
            _ = Glibc.shutdown(peer.fd, Int32(SHUT_RDWR))
        }
    }

    private func wake() {
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}
