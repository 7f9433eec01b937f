import Cancellation
import Foundation
import Glibc
import Telemetry
import TestSupport
import Timekeeping

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
    clock: any TimeSource = .system,
    _ body: (HTTPServer, Int, Metrics) async throws -> T
) async throws -> T {
    var config = HTTPServer.Configuration(port: 0, drainSeconds: 1)
    configure(&config)
    let router = Router()
    routes(router)
    let metrics = Metrics()
    let server = HTTPServer(
        configuration: config, router: router, logger: logs.logger, metrics: metrics, clock: clock)
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

struct Echo: Codable, Equatable {
    var message: String
    var n: Int
}

struct Boom: Error {}

/// Producers created by `/stream`, in order, so tests can inspect what they saw.
final class ProducerLog: Sendable {
    let all = Locked<[String: TickingProducer]>([:])
    func add(_ id: String, _ p: TickingProducer) { all.withLock { $0[id] = p } }
    subscript(id: String) -> TickingProducer? { all.withLock { $0[id] } }
    var count: Int { all.withLock { $0.count } }
}

func standardRoutes(_ producers: ProducerLog) -> (Router) -> Void {
    { router in
        router.get("/hello") { _ in .text("hi") }
        router.post("/echo") { req in
            let echo = try req.decodeJSON(Echo.self)
            return .json(echo)
        }
        router.get("/boom") { _ in throw Boom() }
        router.get("/teapot") { _ in
            throw HTTPError(status: 418, message: "short and stout", type: "x", code: .invalidRequest)
        }
        router.get("/sessions/{id}") { req in .json(["id": req.pathParameters["id"] ?? ""]) }
        router.delete("/sessions/{id}") { _ in .text("deleted") }
        router.get("/stream") { req in
            let q = req.query
            let producer = TickingProducer(
                interval: .milliseconds(Int(q["interval_ms"] ?? "10") ?? 10),
                count: q["count"].flatMap { Int($0) },
                payloadBytes: Int(q["pad"] ?? "0") ?? 0,
                silence: q["silence_ms"].flatMap { Int($0) }.map { .milliseconds($0) })
            producers.add(req.id, producer)
            return .eventStream { stream in await producer.run(stream) }
        }
    }
}

/// Holds a producer until the test opens it (`wait` returns at once once open).
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { c in
            let now = state.withLock { s in
                if s.open { return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { s in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for c in waiters { c.resume() }
    }
}

/// Opens an SSE request and returns the client after reading the response head.
func openStream(port: Int, _ query: String, requestID: String, receiveBuffer: Int? = nil) throws -> (
    TestClient, Int, [(String, String)]
) {
    let client = try TestClient(port: port, receiveBuffer: receiveBuffer)
    client.send("GET /stream?\(query) HTTP/1.1\r\nHost: x\r\nX-Request-Id: \(requestID)\r\n\r\n")
    let (status, headers) = try client.readHead()
    return (client, status, headers)
}
