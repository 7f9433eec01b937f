import CMicroHTTPD
import Foundation
import Telemetry

public enum HTTPServerError: Error, Sendable, CustomStringConvertible, Equatable {
    case invalidHost(String)
    /// Binding or listening failed; `reason` is the system's text (e.g. "Address already in use").
    case listenFailed(host: String, port: Int, reason: String)
    case alreadyStarted
    /// TLS was asked for but cannot be used: `reason` says why (no TLS support, half a
    /// configuration, or a certificate/key GnuTLS refused).
    case tlsUnavailable(reason: String)

    public var description: String {
        switch self {
        case .tlsUnavailable(let r): "cannot serve HTTPS: \(r)"
        case .invalidHost(let h): "invalid listen address '\(h)': expected a numeric IPv4 or IPv6 address"
        case .listenFailed(let h, let p, let r): "could not listen on \(h):\(p): \(r)"
        case .alreadyStarted: "server already started"
        }
    }
}

/// HTTP/1.1 server over libmicrohttpd (internal polling thread + epoll + suspend/resume).
///
/// Every complete request is served by exactly one Swift Task owned by its connection; the
/// connection cancels it (client hang-up, shutdown) and the Task never outlives it. While the
/// Task computes, or while an event stream has nothing to send, the connection is suspended;
/// a watcher thread notices hang-ups on suspended connections within milliseconds.
///
/// The server keeps itself alive from `start()` until `shutdown()` returns.
public final class HTTPServer: Sendable {
    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        /// 0 = pick a free port (see `boundPort`).
        public var port: Int = 8080
        public var maxBodyBytes: Int = 1 << 20
        public var connectionLimit: Int = 512
        /// 0 = no per-IP limit.
        public var perIPConnectionLimit: Int = 0
        /// Idle/slow connections (e.g. a half-sent request) are dropped after this; suspended
        /// connections (a complete request being served) never time out.
        public var connectionTimeoutSeconds: Int = 30
        /// Request line + headers must fit (libmicrohttpd's per-connection memory pool).
        public var headerMemoryLimitBytes: Int = 32 << 10
        /// `: ping` comment after this long without output on an event stream; 0 disables.
        public var heartbeatSeconds: Double = 10
        /// How long `shutdown()` lets in-flight requests finish before cancelling them.
        public var drainSeconds: Double = 10
        /// Kernel send buffer per connection (SO_SNDBUF; 0 = system default, which autotunes to
        /// megabytes). Small keeps a slow SSE client from sitting on stale snapshots in the kernel:
        /// once it fills, snapshots are conflated in the server instead.
        public var socketSendBufferBytes: Int = 64 << 10
        /// Deepest array/object nesting `HTTPRequest.decodeJSON` accepts.
        public var maxJSONDepth: Int = 64
        /// HTTPS when both are set: the PEM *contents* (not paths) of the certificate chain and
        /// its private key. libmicrohttpd serves TLS through GnuTLS.
        public var tlsCertificatePEM: String?
        public var tlsKeyPEM: String?

        public init(
            host: String = "127.0.0.1", port: Int = 8080, maxBodyBytes: Int = 1 << 20, connectionLimit: Int = 512,
            perIPConnectionLimit: Int = 0, connectionTimeoutSeconds: Int = 30, headerMemoryLimitBytes: Int = 32 << 10,
            heartbeatSeconds: Double = 10, drainSeconds: Double = 10, socketSendBufferBytes: Int = 64 << 10,
            maxJSONDepth: Int = 64, tlsCertificatePEM: String? = nil, tlsKeyPEM: String? = nil
        ) {
            self.maxJSONDepth = maxJSONDepth
            self.tlsCertificatePEM = tlsCertificatePEM
            self.tlsKeyPEM = tlsKeyPEM
            self.host = host
            self.port = port
            self.maxBodyBytes = maxBodyBytes
            self.connectionLimit = connectionLimit
            self.perIPConnectionLimit = perIPConnectionLimit
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.headerMemoryLimitBytes = headerMemoryLimitBytes
            self.heartbeatSeconds = heartbeatSeconds
            self.drainSeconds = drainSeconds
            self.socketSendBufferBytes = socketSendBufferBytes
        }
    }

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
    private let state = Locked(State())
    let watcher = HangupWatcher()

    // Metrics this layer owns.
    let cancellationsHelp = "Request Tasks cancelled by their owner, by reason."
    let activeStreams: Gauge
    let openConnections: Gauge
    let eventsSent: Counter
    let eventsDropped: Counter

    public init(configuration: Configuration, router: Router, logger: Logger, metrics: Metrics) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.metrics = metrics
        activeStreams = metrics.gauge("inferd_active_streams", help: "Event streams currently producing.")
        openConnections = metrics.gauge("inferd_open_connections", help: "Open HTTP connections.")
        eventsSent = metrics.counter("inferd_sse_events_sent_total", help: "SSE events written to connections.")
        eventsDropped = metrics.counter(
            "inferd_sse_events_dropped_total", help: "SSE snapshots replaced by a newer one before being written.")
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
            | MHD_USE_ITC.rawValue
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
                        tls_cert_pem: tls == nil ? nil : cert, tls_key_pem: tls == nil ? nil : key)
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
            let drainDeadline = ContinuousClock.now + .seconds(configuration.drainSeconds)
            while runningTaskCount > 0 && ContinuousClock.now < drainDeadline && !Task.isCancelled {
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
    private func cancelInFlight() {
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

    // MARK: libmicrohttpd callbacks (called on its internal thread)

    func handleAccess(
        connection: OpaquePointer, url: String, method: String,
        upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = requestContext.pointee else {
            return firstCall(connection: connection, url: url, method: method, requestContext: requestContext)
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            if exchange.head != nil { return .YES }  // already answered (413 on Content-Length); discard
            let (total, overflow) = exchange.appendBody(
                UnsafeRawBufferPointer(start: upload, count: count), limit: configuration.maxBodyBytes)
            _ = total
            if overflow {
                exchange.discarded += count
                // Chunked bodies can't be answered mid-upload; read and drop a bounded amount, else hang up.
                if exchange.discarded > 16 * max(configuration.maxBodyBytes, 1 << 16) { return .NO }
            }
            return .YES
        }
        if exchange.phase == .receiving && exchange.head == nil {
            if exchange.bodyOverflow {
                return queue(connection, exchange, error: .payloadTooLarge(bodyTooLargeMessage), close: true)
            }
            if state.withLock({ $0.shuttingDown }) {
                return queue(connection, exchange, error: .serviceUnavailable("server is shutting down"), close: true)
            }
            startTask(connection: connection, exchange: exchange)
        }
        if let head = exchange.poll() {
            return queue(connection, exchange, head: head)
        }
        return .YES
    }

    var bodyTooLargeMessage: String { "request body exceeds \(configuration.maxBodyBytes) bytes" }

    private func firstCall(
        connection: OpaquePointer, url: String, method: String,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let headers = Self.values(connection, kind: .HEADER_KIND)
        let clientID = HTTPHeaders(headers)["X-Request-Id"]
        let id = clientID.flatMap { Self.isValidRequestID($0) ? $0 : nil } ?? Self.generateRequestID()
        let exchange = Exchange(
            requestID: id, method: HTTPMethod(method), path: url, connection: ConnectionHandle(raw: connection),
            hooks: .init(
                eventsSent: { [eventsSent] n in eventsSent.increment(by: Double(n)) },
                eventsDropped: { [eventsDropped] n in eventsDropped.increment(by: Double(n)) }))
        exchange.headers = headers
        requestContext.pointee = Unmanaged.passRetained(exchange).toOpaque()
        state.withLock { $0.exchanges[ObjectIdentifier(exchange)] = Registered(exchange: exchange) }
        if let length = HTTPHeaders(headers)["Content-Length"].flatMap({ Int($0) }),
            length > configuration.maxBodyBytes
        {
            return queue(connection, exchange, error: .payloadTooLarge(bodyTooLargeMessage), close: true)
        }
        return .YES
    }

    private func startTask(connection: OpaquePointer, exchange: Exchange) {
        let headers = HTTPHeaders(exchange.headers)
        var remote = [CChar](repeating: 0, count: 64)
        inferd_mhd_client_address(connection, &remote, remote.count)
        let query = Dictionary(
            Self.values(connection, kind: .GET_ARGUMENT_KIND), uniquingKeysWith: { first, _ in first })
        let match = router.match(exchange.method, exchange.path)
        var handler: Handler
        var parameters: [String: String] = [:]
        switch match {
        case .found(let pattern, let h, let p):
            exchange.route = pattern
            handler = h
            parameters = p
        case .notFound:
            handler = { req in throw HTTPError.notFound("no route for \(req.method) \(req.path)") }
        case .methodNotAllowed(let allowed):
            let allow = allowed.map(\.description).joined(separator: ", ")
            handler = { req in
                var response = HTTPResponse.error(
                    .methodNotAllowed("method \(req.method) not allowed for \(req.path); allowed: \(allow)"))
                response.headers.append(("Allow", allow))
                return response
            }
        }
        let wrapped = router.wrap(handler)
        let request = HTTPRequest(
            id: exchange.requestID, method: exchange.method, path: exchange.path, query: query, headers: headers,
            body: exchange.takeBody(),
            remoteAddress: String(decoding: remote.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
            pathParameters: parameters,
            context: exchange.context, route: exchange.route, maxJSONDepth: configuration.maxJSONDepth)
        let key = ObjectIdentifier(exchange)
        state.withLock { s in
            let task = exchange.start { [self] in
                await self.run(exchange, request, wrapped)
            }
            s.tasks[key] = task
        }
        let fd = inferd_mhd_connection_fd(connection)
        if fd >= 0 {
            let token = watcher.watch(fd: fd) { [weak exchange] in
                exchange?.cancel(.clientDisconnected)
            }
            state.withLock { $0.exchanges[key]?.watch = (fd, token) }
        }
    }

    /// The body of every request Task.
    private func run(_ exchange: Exchange, _ request: HTTPRequest, _ handler: Handler) async {
        var response: HTTPResponse
        do {
            response = try await handler(request)
        } catch let error as HTTPError {
            response = .error(error)
        } catch let error where error is CancellationError && request.context.cancellationReason != nil {
            let reason = request.context.cancellationReason!.rawValue
            response = .error(.serviceUnavailable("request cancelled: \(reason)", code: "cancelled"))
        } catch {
            logger.error(
                "handler failed",
                ["request_id": request.id, "path": request.path, "error": String(describing: error)])
            response = .error(.internalError())
        }
        var headers = response.headers
        switch response.body {
        case .bytes(let bytes):
            exchange.respond(ResponseHead(status: response.status, headers: headers, body: bytes))
        case .eventStream(let producer):
            headers.removeAll { $0.0.lowercased() == "content-type" || $0.0.lowercased() == "cache-control" }
            headers += [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
            exchange.respond(ResponseHead(status: response.status, headers: headers, body: nil))
            activeStreams.add(1)
            let stream = EventStream(exchange: exchange)
            let heartbeat = configuration.heartbeatSeconds
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await producer(stream) }
                group.addTask { await Self.heartbeat(exchange, every: heartbeat) }
                _ = await group.next()
                group.cancelAll()
            }
            activeStreams.add(-1)
        }
        let outcome = exchange.finished()
        if let reason = outcome.reason {
            metrics.counter(
                "inferd_cancellations_total", help: cancellationsHelp, labels: ["reason": reason.rawValue]
            ).increment()
            let ms = outcome.sinceCancel.map { String(format: "%.1f", $0.milliseconds) } ?? ""
            logger.info(
                "request cancelled",
                [
                    "request_id": exchange.requestID, "reason": reason.rawValue,
                    "events_after_cancel": String(outcome.eventsAfterCancel), "stop_ms": ms,
                ])
        }
        let key = ObjectIdentifier(exchange)
        let watch = state.withLock { s in
            s.tasks[key] = nil
            defer { s.exchanges[key]?.watch = nil }
            return s.exchanges[key]?.watch
        }
        if let watch { watcher.unwatch(fd: watch.fd, token: watch.token) }
    }

    /// Sends `: ping` whenever the stream has been silent for `seconds`; returns when cancelled.
    static func heartbeat(_ exchange: Exchange, every seconds: Double) async {
        while !Task.isCancelled {
            guard seconds > 0 else {
                try? await Task.sleep(for: .seconds(3600))
                continue
            }
            let due = exchange.lastOutput + .seconds(seconds)
            if ContinuousClock.now >= due {
                exchange.enqueue {
                    $0.heartbeat()
                    return false
                }
                continue
            }
            do { try await Task.sleep(until: due, clock: .continuous) } catch { return }
        }
    }

    func requestCompleted(_ exchange: Exchange, code: MHD_RequestTerminationCode) {
        exchange.closed()
        let key = ObjectIdentifier(exchange)
        let watch = state.withLock { s in s.exchanges.removeValue(forKey: key)?.watch }
        if let watch { watcher.unwatch(fd: watch.fd, token: watch.token) }
        // 499 (as nginx): the client went away before a response was queued.
        let status = exchange.head?.status ?? 499
        let route = exchange.route
        metrics.counter(
            "inferd_http_requests_total", help: "HTTP requests completed, by route pattern, method and status.",
            labels: ["route": route, "method": exchange.method.description, "status": String(status)]
        ).increment()
        let ms = (ContinuousClock.now - exchange.startedAt).milliseconds
        var fields = [
            ("method", exchange.method.description), ("path", exchange.path), ("status", String(status)),
            ("request_id", exchange.requestID), ("duration_ms", String(format: "%.1f", ms)),
            ("ok", code == .REQUEST_TERMINATED_COMPLETED_OK ? "true" : "false"),
        ]
        let own = Set(fields.map(\.0))
        fields += exchange.context.loggedValues.sorted { $0.key < $1.key }.filter { !own.contains($0.key) }
            .map { ($0.key, $0.value) }
        logger.log(.info, "request completed", fields: fields)
    }

    func connectionNotified(_ connection: OpaquePointer?, started: Bool) {
        openConnections.add(started ? 1 : -1)
        if started, let connection, configuration.socketSendBufferBytes > 0 {
            let fd = inferd_mhd_connection_fd(connection)
            var size = Int32(clamping: configuration.socketSendBufferBytes)
            if fd >= 0 { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        }
    }

    // MARK: queueing responses (libmicrohttpd thread, inside the access handler)

    private func queue(_ connection: OpaquePointer, _ exchange: Exchange, error: HTTPError, close: Bool)
        -> MHD_Result
    {
        let response = HTTPResponse.error(error)
        guard case .bytes(let body) = response.body else { return .NO }
        var headers = response.headers
        if close { headers.append(("Connection", "close")) }
        let head = ResponseHead(status: response.status, headers: headers, body: body)
        exchange.setDirectHead(head)
        return queue(connection, exchange, head: head)
    }

    private func queue(_ connection: OpaquePointer, _ exchange: Exchange, head: ResponseHead) -> MHD_Result {
        let response: OpaquePointer?
        if let body = head.body {
            response = body.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(
                    buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
            }
        } else {
            let cls = Unmanaged.passRetained(exchange).toOpaque()
            response = MHD_create_response_from_callback(
                inferd_mhd_size_unknown(), 16 << 10, streamReaderCallback, cls, streamFreeCallback)
            if response == nil { Unmanaged<Exchange>.fromOpaque(cls).release() }
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        for (name, value) in head.headers {
            _ = MHD_add_response_header(response, name, value)
        }
        _ = MHD_add_response_header(response, "X-Request-Id", exchange.requestID)
        return MHD_queue_response(connection, UInt32(clamping: head.status), response)
    }

    // MARK: helpers

    static func values(_ connection: OpaquePointer, kind: MHD_ValueKind) -> [(String, String)] {
        let box = KeyValueSink()
        let cls = Unmanaged.passUnretained(box).toOpaque()
        _ = MHD_get_connection_values(connection, kind, keyValueIteratorCallback, cls)
        return withExtendedLifetime(box) { box.items }
    }

    package static func isValidRequestID(_ s: String) -> Bool {
        let utf8 = s.utf8
        guard (1...64).contains(utf8.count) else { return false }
        return utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E
                || c == 0x5F || c == 0x2D
        }
    }

    static func generateRequestID() -> String {
        var g = SystemRandomNumberGenerator()
        let a = g.next() as UInt64
        let b = g.next() as UInt64
        return String(format: "%016llx%016llx", a, b)
    }
}

extension Duration {
    var milliseconds: Double {
        let c = components
        return Double(c.seconds) * 1000 + Double(c.attoseconds) / 1e15
    }
}

// MARK: - @convention(c) callbacks (never in main.swift: they run on libmicrohttpd's threads)

private let accessHandlerCallback: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let uploadDataSize, let conCls else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.handleAccess(
        connection: connection, url: url.map { String(cString: $0) } ?? "/",
        method: method.map { String(cString: $0) } ?? "GET", upload: uploadData, uploadSize: uploadDataSize,
        requestContext: conCls)
}

private let completedCallback: MHD_RequestCompletedCallback = { cls, _, conCls, code in
    guard let cls, let conCls, let raw = conCls.pointee else { return }
    conCls.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
    server.requestCompleted(exchange, code: code)
}

private let notifyConnectionCallback: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    server.connectionNotified(connection, started: code == .CONNECTION_NOTIFY_STARTED)
}

private let streamReaderCallback: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer else { return inferd_mhd_reader_end_with_error() }
    let exchange = Unmanaged<Exchange>.fromOpaque(cls).takeUnretainedValue()
    return exchange.read(into: buffer, max: max)
}

private let streamFreeCallback: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<Exchange>.fromOpaque(cls).release()
}

private let keyValueIteratorCallback: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let sink = Unmanaged<KeyValueSink>.fromOpaque(cls).takeUnretainedValue()
    sink.items.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return .YES
}

/// Collects headers or query arguments during one `MHD_get_connection_values` call.
final class KeyValueSink {
    var items: [(String, String)] = []
}
