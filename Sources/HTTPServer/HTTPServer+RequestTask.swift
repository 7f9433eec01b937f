import Foundation
import Telemetry
import Timekeeping

extension HTTPServer {
    /// The body of every request Task.
    func run(_ exchange: Exchange, _ request: HTTPRequest, _ handler: Handler) async {
        var response: HTTPResponse
        do {
            response = try await handler(request)
        } catch let error as HTTPError {
            response = .error(error)
        } catch let error where error is CancellationError && request.context.cancellationReason != nil {
            let reason = request.context.cancellationReason!.rawValue
            response = .error(.serviceUnavailable("request cancelled: \(reason)", code: .cancelled))
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
                group.addTask { await Self.heartbeat(exchange, every: heartbeat, clock: exchange.clock) }
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

    /// Sends `: ping` whenever the stream has been silent for `seconds` by `clock`; returns when
    /// cancelled.
    static func heartbeat(_ exchange: Exchange, every seconds: Double, clock: any TimeSource) async {
        while !Task.isCancelled {
            guard seconds > 0 else {
                try? await Task.sleep(for: .seconds(3600))
                continue
            }
            let due = exchange.lastOutput + .seconds(seconds)
            if clock.now >= due {
                exchange.enqueue {
                    $0.heartbeat()
                    return false
                }
                continue
            }
            do { try await clock.sleep(until: due) } catch { return }
        }
    }
}
