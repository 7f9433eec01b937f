import CMicroHTTPD
import Foundation
import Telemetry

extension HTTPServer {
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
        let id = Self.connectionID(connection)
        guard started, let connection else {
            connectionGuard.closed(id)
            return
        }
        let fd = inferd_mhd_connection_fd(connection)
        if configuration.socketSendBufferBytes > 0 {
            var size = Int32(clamping: configuration.socketSendBufferBytes)
            if fd >= 0 { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        }
        if fd >= 0 { connectionGuard.opened(id, fd: fd, remote: Self.remoteAddress(connection)) }
    }
}
