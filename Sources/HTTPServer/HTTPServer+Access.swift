import CMicroHTTPD
import Foundation

/// Receiving a request and queueing its response: called on libmicrohttpd's internal thread,
/// from the access handler.
extension HTTPServer {
    func handleAccess(
        connection: OpaquePointer, url: String, method: String, version: String, droppedAfterHeader: Int = -1,
        upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = requestContext.pointee else {
            return firstCall(
                connection: connection, url: url, method: method, version: version,
                droppedAfterHeader: droppedAfterHeader, requestContext: requestContext)
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
            // The body is complete: no deadline while the request is served.
            connectionGuard.serving(Self.connectionID(connection))
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

    /// The head is complete and no body byte has been read: check the head, ask the gate, start
    /// the body's deadline. Every answer given here closes the connection after it (the body, if
    /// any, is never read: libmicrohttpd discards a request answered this early).
    func firstCall(
        connection: OpaquePointer, url: String, method: String, version: String, droppedAfterHeader: Int,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let headers = Self.values(connection, kind: .HEADER_KIND)
        let clientID = HTTPHeaders(headers)["X-Request-Id"]
        let id = clientID.flatMap { Self.isValidRequestID($0) ? $0 : nil } ?? Self.generateRequestID()
        let exchange = Exchange(
            requestID: id, method: HTTPMethod(method), path: url, connection: ConnectionHandle(raw: connection),
            hooks: .init(
                eventsSent: { [eventsSent] n in eventsSent.increment(by: Double(n)) },
                eventsDropped: { [eventsDropped] n in eventsDropped.increment(by: Double(n)) }),
            clock: clock)
        exchange.headers = headers
        requestContext.pointee = Unmanaged.passRetained(exchange).toOpaque()
        state.withLock { $0.exchanges[ObjectIdentifier(exchange)] = Registered(exchange: exchange) }
        let connectionID = Self.connectionID(connection)
        if let problem = Self.headProblem(version: version, headers: headers, droppedAfter: droppedAfterHeader) {
            connectionGuard.serving(connectionID)
            return queue(connection, exchange, error: problem, close: true)
        }
        if let length = HTTPHeaders(headers)["Content-Length"].flatMap({ Int($0) }),
            length > configuration.maxBodyBytes
        {
            connectionGuard.serving(connectionID)
            return queue(connection, exchange, error: .payloadTooLarge(bodyTooLargeMessage), close: true)
        }
        let route: String
        if case .found(let pattern, _, _) = router.match(exchange.method, exchange.path) {
            route = pattern
        } else {
            route = "unmatched"
        }
        exchange.route = route
        let head = RequestHead(
            id: exchange.requestID, method: exchange.method, path: exchange.path,
            route: route, headers: HTTPHeaders(headers), remoteAddress: Self.remoteAddress(connection))
        switch router.decide(head) {
        case .refuse(let response):
            connectionGuard.serving(connectionID)
            return queue(connection, exchange, refusal: response)
        case .pass(let trusted):
            connectionGuard.headReceived(connectionID, trusted: trusted)
        }
        return .YES
    }

    func startTask(connection: OpaquePointer, exchange: Exchange) {
        let headers = HTTPHeaders(exchange.headers)
        let query = Dictionary(
            Self.values(connection, kind: .GET_ARGUMENT_KIND), uniquingKeysWith: { first, _ in first })
        let match = router.match(exchange.method, exchange.path)
        var handler: Handler
        var parameters: [String: String] = [:]
        switch match {
        case .found(let pattern, let h, let p):
            exchange.route = pattern
            handler = { req in
                try req.refuseControlCharacters()
                return try await h(req)
            }
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
            remoteAddress: Self.remoteAddress(connection),
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

    // MARK: queueing responses

    func queue(_ connection: OpaquePointer, _ exchange: Exchange, error: HTTPError, close: Bool)
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

    /// A head gate's refusal: written at once, and the connection closes after it.
    func queue(_ connection: OpaquePointer, _ exchange: Exchange, refusal: HTTPResponse) -> MHD_Result {
        guard case .bytes(let body) = refusal.body else {
            return queue(
                connection, exchange, error: .internalError("a refusal must have a complete body"), close: true)
        }
        let head = ResponseHead(
            status: refusal.status, headers: refusal.headers + [("Connection", "close")], body: body)
        exchange.setDirectHead(head)
        return queue(connection, exchange, head: head)
    }

    func queue(_ connection: OpaquePointer, _ exchange: Exchange, head: ResponseHead) -> MHD_Result {
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
        for (name, value) in configuration.responseHeaders {
            _ = MHD_add_response_header(response, name, value)
        }
        return MHD_queue_response(connection, UInt32(clamping: head.status), response)
    }

    // MARK: helpers

    /// Headers or query arguments, each name and value whole: a NUL inside one is kept (and
    /// refused by `headProblem`), not taken for the end of the value.
    static func values(_ connection: OpaquePointer, kind: MHD_ValueKind) -> [(String, String)] {
        let box = KeyValueSink()
        let cls = Unmanaged.passUnretained(box).toOpaque()
        _ = MHD_get_connection_values_n(connection, kind, keyValueIteratorCallback, cls)
        return withExtendedLifetime(box) { box.items }
    }

    /// The key `ConnectionGuard` knows a connection by: libmicrohttpd's pointer, which stays the
    /// same from NOTIFY_CONNECTION STARTED to CLOSED.
    static func connectionID(_ connection: OpaquePointer?) -> UInt64 {
        UInt64(UInt(bitPattern: connection))
    }

    static func remoteAddress(_ connection: OpaquePointer) -> String {
        var remote = [CChar](repeating: 0, count: 64)
        inferd_mhd_client_address(connection, &remote, remote.count)
        return String(decoding: remote.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
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
