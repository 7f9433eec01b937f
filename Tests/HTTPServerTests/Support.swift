import Foundation
import Glibc
import Telemetry
import TestSupport

@testable import HTTPServer

/// A test-only producer: numbered snapshots on a timer until cancelled (or `count` reached),
/// recording when it saw cancellation and how many events it produced.
final class TickingProducer: Sendable {
    struct Record {
        var emitted = 0
        var emittedTimes: [ContinuousClock.Instant] = []
        var cancelSeenAt: ContinuousClock.Instant?
        var reason: CancellationReason?
        var finishedNormally = false
        var stream: EventStream?
    }

    let interval: Duration
    let count: Int?
    let payloadBytes: Int
    let silence: Duration?
    let record = Locked(Record())

    init(interval: Duration = .milliseconds(10), count: Int? = nil, payloadBytes: Int = 0, silence: Duration? = nil) {
        self.interval = interval
        self.count = count
        self.payloadBytes = payloadBytes
        self.silence = silence
    }

    var snapshot: Record { record.withLock { $0 } }

    func run(_ stream: EventStream) async {
        record.withLock { $0.stream = stream }
        stream.send(event: "started", data: "{}")
        let padding = String(repeating: "x", count: payloadBytes)
        var n = 0
        do {
            if let silence {
                try await Task.sleep(for: silence)
            }
            while count.map({ n < $0 }) ?? true {
                try Task.checkCancellation()
                n += 1
                stream.sendSnapshot(event: "snapshot", data: "{\"n\":\(n),\"pad\":\"\(padding)\"}")
                record.withLock {
                    $0.emitted = n
                    $0.emittedTimes.append(.now)
                }
                try await Task.sleep(for: interval)
            }
            stream.send(event: "done", data: "{\"n\":\(n)}")
            record.withLock { $0.finishedNormally = true }
        } catch {
            let reason = stream.context.cancellationReason
            record.withLock {
                $0.cancelSeenAt = .now
                $0.reason = reason
            }
            if reason == .shutdown {
                stream.send(event: "terminal", data: "{\"reason\":\"shutdown\",\"n\":\(n)}")
            }
        }
    }
}

/// Starts a server on port 0 with the given routes; shuts it down afterwards.
func withServer<T>(
    _ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
    routes: (Router) -> Void,
    logs: LogCapture = LogCapture(),
    _ body: (HTTPServer, Int, Metrics) async throws -> T
) async throws -> T {
    var config = HTTPServer.Configuration(port: 0, drainSeconds: 1)
    configure(&config)
    let router = Router()
    routes(router)
    let metrics = Metrics()
    let server = HTTPServer(configuration: config, router: router, logger: logs.logger, metrics: metrics)
    try server.start()
    do {
        let result = try await body(server, server.boundPort, metrics)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}
