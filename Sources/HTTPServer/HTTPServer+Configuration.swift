extension HTTPServer {
    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        /// 0 = pick a free port (see `boundPort`).
        public var port: Int = 8080
        public var maxBodyBytes: Int = 1 << 20
        public var connectionLimit: Int = 512
        /// Most connections from one address (libmicrohttpd resets the one past it); 0 = none.
        public var perIPConnectionLimit: Int = 64
        /// Places of `connectionLimit` that connections still receiving a request and not yet
        /// trusted by the head gate may never take: past `connectionLimit - connectionReserve`
        /// such connections, the oldest is closed.
        public var connectionReserve: Int = 64
        /// Silent connections are dropped after this (any byte resets it); suspended connections
        /// (a complete request being served) never time out.
        public var connectionTimeoutSeconds: Int = 30
        /// A request's line and headers must be complete this long after the connection opened
        /// (after the previous request, on a kept-alive one: `connectionTimeoutSeconds` plus this).
        /// Absolute: a client trickling bytes is closed at it all the same.
        public var headerTimeoutSeconds: Double = 10
        /// A request's body must be complete this long after its headers. Absolute too.
        public var bodyTimeoutSeconds: Double = 30
        /// Request line + headers must fit (libmicrohttpd's per-connection memory pool).
        public var headerMemoryLimitBytes: Int = 32 << 10
        /// `: ping` comment after this long without output on an event stream; 0 disables.
        public var heartbeatSeconds: Double = 10
        /// How long `shutdown()` lets in-flight requests finish before cancelling them.
        public var drainSeconds: Double = 10
        /// Headers every response carries besides `X-Request-Id` (a replica's name).
        public var responseHeaders: [(String, String)] = []
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
            perIPConnectionLimit: Int = 64, connectionTimeoutSeconds: Int = 30, headerMemoryLimitBytes: Int = 32 << 10,
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

        /// The deadlines and the untrusted share as the ledger takes them (at least one place).
        var ledgerLimits: ConnectionLedger.Limits {
            ConnectionLedger.Limits(
                headerTimeout: .seconds(headerTimeoutSeconds), bodyTimeout: .seconds(bodyTimeoutSeconds),
                idleAllowance: .seconds(connectionTimeoutSeconds),
                untrustedPlaces: max(1, connectionLimit - max(0, connectionReserve)))
        }
    }
}
