import CMicroHTTPD
import Foundation
import Telemetry
import Timekeeping

/// HTTP/1.1 server over libmicrohttpd (internal polling thread + epoll + suspend/resume).
///
/// Every complete request is served by exactly one Swift Task owned by its connection; the
/// connection cancels it (client hang-up, shutdown) and the Task never outlives it. While the
/// Task computes, or while an event stream has nothing to send, the connection is suspended;
/// a watcher thread notices hang-ups on suspended connections within milliseconds.
///
/// The server keeps itself alive from `start()` until `shutdown()` returns.
public final class HTTPServer: Sendable {
    struct DaemonHandle: @unchecked Sendable {
        let raw: OpaquePointer
    }

    struct Registered {
        let exchange: Exchange
        var watch: (fd: Int32, token: UInt64)?
    }

    struct State {
        var daemon: DaemonHandle?
        var port = 0
        var shuttingDown = false
        var stopped = false
        var retainedSelf: Unmanaged<HTTPServer>?
        var exchanges: [ObjectIdentifier: Registered] = [:]
        var tasks: [ObjectIdentifier: Task<Void, Never>] = [:]
    }

    public let configuration: Configuration
    let router: Router
    let logger: Logger
    let metrics: Metrics
    let state = Locked(State())
    let watcher = HangupWatcher()
    /// Absolute deadlines for a request's head and body, and the places half-sent connections
    /// may hold (`ConnectionLedger`).
    let connectionGuard: ConnectionGuard
    /// Decides stream heartbeats and the shutdown drain's end (the system's time; tests pass a
    /// manual one).
    let clock: any TimeSource

    // Metrics this layer owns.
    let cancellationsHelp = "Request Tasks cancelled by their owner, by reason."
    let activeStreams: Gauge
    let openConnections: Gauge
    let eventsSent: Counter
    let eventsDropped: Counter

    public init(
        configuration: Configuration, router: Router, logger: Logger, metrics: Metrics,
        clock: any TimeSource = .system
    ) {
        self.configuration = configuration
        self.clock = clock
        self.router = router
        self.logger = logger
        self.metrics = metrics
        activeStreams = metrics.gauge("inferd_active_streams", help: "Event streams currently producing.")
        openConnections = metrics.gauge("inferd_open_connections", help: "Open HTTP connections.")
        eventsSent = metrics.counter("inferd_sse_events_sent_total", help: "SSE events written to connections.")
        eventsDropped = metrics.counter(
            "inferd_sse_events_dropped_total", help: "SSE snapshots replaced by a newer one before being written.")
        connectionGuard = ConnectionGuard(
            limits: configuration.ledgerLimits, clock: clock, logger: logger,
            closedEarly: { [metrics] reason in
                metrics.counter(
                    "inferd_connections_closed_early_total",
                    help: "Connections closed before their request was complete, by reason.",
                    labels: ["reason": reason.rawValue]
                ).increment()
            })
    }

    /// The port actually listened on (useful with port 0); 0 before `start()`.
    public var boundPort: Int { state.withLock { $0.port } }

    /// Starts listening. Throws `HTTPServerError.listenFailed` when the port is taken.
    public func start() throws {
        let retained: Unmanaged<HTTPServer> = try state.withLock { s in
            if s.daemon != nil || s.stopped { throw HTTPServerError.alreadyStarted }
            let retained = Unmanaged.passRetained(self)
            s.retainedSelf = retained
            return retained
        }
        let cls = retained.toOpaque()
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ITC.rawValue | MHD_USE_ERROR_LOG.rawValue
        let tls: (cert: String, key: String)?
        do {
            tls = try Self.checkTLS(configuration)
        } catch {
            state.withLock { $0.retainedSelf = nil }
            retained.release()
            throw error
        }
        if tls != nil { flags |= MHD_USE_TLS.rawValue }
        var error: Int32 = 0
        var tlsRefused: Int32 = 0
        let daemon: OpaquePointer? = configuration.host.withCString { host in
            (tls?.cert ?? "").withCString { cert in
                (tls?.key ?? "").withCString { key in
                    var config = inferd_mhd_config(
                        flags: UInt32(flags), host: host, port: UInt16(clamping: configuration.port),
                        connection_limit: UInt32(clamping: configuration.connectionLimit),
                        per_ip_connection_limit: UInt32(clamping: configuration.perIPConnectionLimit),
                        connection_timeout_seconds: UInt32(clamping: configuration.connectionTimeoutSeconds),
                        connection_memory_limit: configuration.headerMemoryLimitBytes,
                        access_handler: accessHandlerCallback, access_handler_cls: cls,
                        completed: completedCallback, completed_cls: cls,
                        notify_connection: notifyConnectionCallback, notify_connection_cls: cls,
                        tls_cert_pem: tls == nil ? nil : cert, tls_key_pem: tls == nil ? nil : key,
                        logger: microHTTPDLoggerCallback, logger_cls: cls)
                    let d = inferd_mhd_start(&config, &error)
                    if d == nil && tls != nil { tlsRefused = inferd_mhd_tls_refused(&config) }
                    return d
                }
            }
        }
        guard let daemon else {
            state.withLock { $0.retainedSelf = nil }
            retained.release()
            if error == EINVAL { throw HTTPServerError.invalidHost(configuration.host) }
            if tlsRefused != 0 {
                throw HTTPServerError.tlsUnavailable(
                    reason: "GnuTLS refused the certificate or key (not valid PEM, or the key does not match)")
            }
            let reason = error == 0 ? "address in use or unavailable" : String(cString: strerror(error))
            throw HTTPServerError.listenFailed(host: configuration.host, port: configuration.port, reason: reason)
        }
        let port = Int(inferd_mhd_bound_port(daemon))
        state.withLock {
            $0.daemon = DaemonHandle(raw: daemon)
            $0.port = port
        }
        connectionGuard.start()
        logger.info(
            "http server listening",
            ["host": configuration.host, "port": String(port), "scheme": tls == nil ? "http" : "https"])
    }

    /// nil for plain HTTP; the PEM pair for HTTPS, after the checks GnuTLS would only answer with
    /// a bare start failure.
    static func checkTLS(_ c: Configuration) throws(HTTPServerError) -> (cert: String, key: String)? {
        switch (c.tlsCertificatePEM, c.tlsKeyPEM) {
        case (nil, nil): return nil
        case (.some, nil), (nil, .some):
            throw .tlsUnavailable(reason: "both a certificate and a private key are needed")
        case (let cert?, let key?):
            guard inferd_mhd_tls_supported() != 0 else {
                throw .tlsUnavailable(reason: "this libmicrohttpd was built without TLS support")
            }
            guard cert.contains("-----BEGIN CERTIFICATE-----") else {
                throw .tlsUnavailable(reason: "the certificate is not PEM (no BEGIN CERTIFICATE block)")
            }
            guard key.contains("-----BEGIN") && key.contains("PRIVATE KEY-----") else {
                throw .tlsUnavailable(reason: "the private key is not PEM (no BEGIN ... PRIVATE KEY block)")
            }
            return (cert, key)
        }
    }

    /// Stops accepting, lets in-flight requests finish for up to `drainSeconds`, cancels the rest
    /// with reason `.shutdown`, waits for their Tasks and for their last output to be written,
    /// then stops the daemon. Safe to call more than once.
    public func shutdown() async {
        guard
            let daemon: DaemonHandle = state.withLock({ s in
                guard let d = s.daemon, !s.shuttingDown else { return nil }
                s.shuttingDown = true
                return d
            })
        else { return }
        logger.info("http server draining", ["in_flight": String(runningTaskCount)])
        let listenFD = MHD_quiesce_daemon(daemon.raw)

        // Cancelling the task that called shutdown() ends the drain early: in-flight requests are
        // cancelled at once (still with reason .shutdown) instead of after drainSeconds.
        await withTaskCancellationHandler {
            // The count is polled in real time; whether the drain is over is the time source's.
            let drainDeadline = clock.now + .seconds(configuration.drainSeconds)
            while runningTaskCount > 0 && clock.now < drainDeadline && !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
            }
        } onCancel: {
            cancelInFlight()
        }
        cancelInFlight()
        let tasks = state.withLock { Array($0.tasks.values) }
        for task in tasks { await task.value }

        // Give the last events (e.g. a terminal event after a shutdown cancel) time to be written.
        let flushDeadline = ContinuousClock.now + .seconds(2)
        while answeringCount > 0 && ContinuousClock.now < flushDeadline && !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
        }
        watcher.stop()
        connectionGuard.stop()
        // No connection is suspended any more: every Task has finished and woken its connection.
        MHD_stop_daemon(daemon.raw)
        if listenFD >= 0 { close(listenFD) }
        let retained = state.withLock { s in
            s.daemon = nil
            s.stopped = true
            defer { s.retainedSelf = nil }
            return s.retainedSelf
        }
        logger.info("http server stopped", [:])
        retained?.release()
    }

    /// The owner's side of shutdown: cancel every request Task still running, reason `.shutdown`.
    func cancelInFlight() {
        let leftovers = state.withLock { s in s.exchanges.values.map(\.exchange) }
        var cancelled = 0
        for exchange in leftovers where exchange.cancel(.shutdown) { cancelled += 1 }
        if cancelled > 0 { logger.info("http server cancelling requests", ["count": String(cancelled)]) }
    }

    // MARK: introspection (tests, diagnostics)

    /// Request Tasks that have not finished yet.
    var runningTaskCount: Int { state.withLock { $0.tasks.count } }
    /// Requests known to libmicrohttpd (headers received, not yet completed).
    var exchangeCount: Int { state.withLock { $0.exchanges.count } }
    /// Requests whose Task started and that libmicrohttpd has not completed yet.
    var answeringCount: Int { state.withLock { $0.exchanges.values.filter { $0.exchange.task != nil }.count } }
    var watchedConnectionCount: Int { watcher.watchedCount }
}
