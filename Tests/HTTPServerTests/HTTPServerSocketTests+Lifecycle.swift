import Cancellation
import Foundation
import Glibc
import Telemetry
import TestSupport
import Testing
import Timekeeping

@testable import HTTPServer

// Lifecycle tests share the serialized suite: the fd-count check needs no other sockets opening.
extension HTTPServerSocketTests {
    @Test func longNonStreamingHandlerIsCancelledWhenClientLeaves() async throws {
        let started = Locked(false)
        let seen = Locked<(ContinuousClock.Instant?, CancellationReason?)>((nil, nil))
        try await withServer(routes: { router in
            router.post("/generate") { req in
                started.withLock { $0 = true }
                do {
                    try await Task.sleep(for: .seconds(60))
                } catch {
                    let reason = req.context.cancellationReason
                    seen.withLock { $0 = (.now, reason) }
                    throw error
                }
                return .text("done")
            }
        }) { server, port, _ in
            let c = try await offPool { () -> TestClient in
                let c = try TestClient(port: port)
                c.send("POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
                return c
            }
            // The client leaves only once its handler runs: before that there is nothing to cancel,
            // and on a loaded machine a fixed pause may not be enough to get there.
            #expect(await eventually(timeout: .seconds(10)) { started.withLock { $0 } })
            let closedAt = ContinuousClock.now
            c.close()
            // Noticed long before the handler's 60 s would end it (milliseconds on a quiet machine).
            #expect(await eventually(timeout: .seconds(10)) { seen.withLock { $0.0 } != nil })
            let (at, reason) = seen.withLock { $0 }
            #expect(reason == .clientDisconnected)
            if let at {
                #expect(at - closedAt < .seconds(5))
                print("disconnect→cancel of a non-streaming handler: \((at - closedAt).milliseconds) ms")
            }
            #expect(await eventually { server.runningTaskCount == 0 && server.exchangeCount == 0 })
        }
    }

    static func openMany(port: Int, count: Int) throws -> [TestClient] {
        var clients: [TestClient] = []
        for i in 0..<count {
            let c = try TestClient(port: port)
            c.send("GET /stream?interval_ms=50 HTTP/1.1\r\nHost: x\r\nX-Request-Id: many-\(i)\r\n\r\n")
            clients.append(c)
        }
        for c in clients {
            let (status, _) = try c.readHead()
            guard status == 200 else { throw ClientError(description: "status \(status)") }
        }
        return clients
    }

    static func allReleased(_ server: HTTPServer, _ metrics: Metrics, baseline: Int) -> Bool {
        let gauges = metrics.value("inferd_open_connections") == 0 && metrics.value("inferd_active_streams") == 0
        let server = server.runningTaskCount == 0 && server.exchangeCount == 0 && server.watchedConnectionCount == 0
        // At most the baseline: other suites running in parallel open and close fds of their own.
        return gauges && server && openFDCount() <= baseline
    }

    @Test func twoHundredStreamsThenAllDisconnectReturnsToBaseline() async throws {
        // All 200 come from 127.0.0.1: no per-address limit here.
        try await withServer({ $0.perIPConnectionLimit = 0 }, routes: standardRoutes(producers)) {
            server, port, metrics in
            let baseline = openFDCount()
            let clients = try await offPool { try Self.openMany(port: port, count: 200) }
            #expect(await eventually { metrics.value("inferd_active_streams") == 200 })
            #expect(metrics.value("inferd_open_connections") == 200)
            #expect(server.runningTaskCount == 200)
            #expect(server.watchedConnectionCount == 200)
            let during = openFDCount()
            for c in clients { c.close() }
            let back = await eventually(timeout: .seconds(10)) {
                Self.allReleased(server, metrics, baseline: baseline)
            }
            let after = openFDCount()
            let open = metrics.value("inferd_open_connections") ?? -1
            print("200 streams: fds baseline \(baseline), during \(during), after \(after); open_connections \(open)")
            #expect(back)
            #expect(metrics.value("inferd_cancellations_total", labels: ["reason": "client_disconnected"]) == 200)
        }
    }

    /// The drain's end is the server's time source's: the test decides when `drainSeconds` have
    /// passed, so the quick stream finishes inside the drain however slow the machine is.
    @Test(.timeLimit(.minutes(1))) func gracefulShutdownDrainsThenCancelsWithReasonShutdown() async throws {
        let metrics = Metrics()
        let logs = LogCapture()
        let router = Router()
        let clock = ManualTimeSource()
        standardRoutes(producers)(router)
        let server = HTTPServer(
            configuration: .init(port: 0, drainSeconds: 1), router: router, logger: logs.logger, metrics: metrics,
            clock: clock)
        try server.start()
        let port = server.boundPort
        let (quick, _, _) = try await offPool {
            try openStream(port: port, "interval_ms=50&count=6", requestID: "quick")
        }
        let (endless, _, _) = try await offPool { try openStream(port: port, "interval_ms=50", requestID: "endless") }
        let shutdownStarted = ContinuousClock.now
        let shutdown = Task { await server.shutdown() }
        func readAll(_ c: TestClient) async throws -> [SSEReader.Event] {
            try await offPool {
                var reader = SSEReader()
                while let chunk = try c.readChunk() { reader.text += String(decoding: chunk, as: UTF8.self) }
                return reader.events
            }
        }
        async let endlessEvents = readAll(endless)
        let q = try await readAll(quick)
        // The quick stream ended inside the drain; the endless one runs on, even once more real time
        // than `drainSeconds` has passed: no time has passed by the server's time source.
        #expect(await eventually { logs.matching("http server draining").count == 1 })
        try await Task.sleep(until: shutdownStarted + .seconds(2), clock: .continuous)
        #expect(producers["endless"]?.snapshot.cancelSeenAt == nil)
        clock.advance(by: .milliseconds(990))
        try await Task.sleep(for: .milliseconds(50))
        #expect(producers["endless"]?.snapshot.cancelSeenAt == nil)
        clock.advance(by: .milliseconds(10))
        let e = try await endlessEvents
        await shutdown.value
        #expect(q.last?.name == "done")
        #expect(producers["quick"]?.snapshot.finishedNormally == true)
        #expect(e.last?.name == "terminal")
        #expect(e.last?.data.contains("shutdown") == true)
        #expect(producers["endless"]?.snapshot.reason == .shutdown)
        #expect(metrics.value("inferd_cancellations_total", labels: ["reason": "shutdown"]) == 1)
        #expect(logs.matching("request cancelled").contains { $0.contains("reason=shutdown") })
        // No longer listening.
        #expect(throws: (any Error).self) { _ = try TestClient(port: port) }
    }

    @Test func startOnATakenPortThrows() async throws {
        try await withServer(routes: { _ in }) { _, port, _ in
            let other = HTTPServer(
                configuration: .init(port: port), router: Router(), logger: LogCapture().logger, metrics: Metrics())
            do {
                try other.start()
                Issue.record("second server started on a taken port")
                await other.shutdown()
            } catch let error as HTTPServerError {
                print("taken port: \(error)")
                guard case .listenFailed(_, let p, _) = error else {
                    Issue.record("unexpected error \(error)")
                    return
                }
                #expect(p == port)
            }
        }
    }

    /// libmicrohttpd keeps a connection's last activity in whole seconds, so a timeout of T
    /// closes an idle connection after between T and T + 1 s: 2 s here, and the request and the
    /// stream's silence last 3.5 s, past the most a timeout could allow. (With T = 1 an idle gap
    /// of a few milliseconds across a second boundary, plus a loaded machine, closed it.)
    @Test func longRequestsOutliveTheConnectionTimeoutBecauseTheyAreSuspended() async throws {
        try await withServer(
            {
                $0.connectionTimeoutSeconds = 2
                $0.heartbeatSeconds = 0
            },
            routes: { router in
                standardRoutes(producers)(router)
                router.get("/slow") { _ in
                    try await Task.sleep(for: .milliseconds(3500))
                    return .text("finally")
                }
            }
        ) { _, port, _ in
            try await offPool {
                let c = try TestClient(port: port, timeout: 30)
                let r = try c.request("GET", "/slow")
                #expect(r.status == 200)
                #expect(r.text == "finally")
                let (s, status, _) = try openStream(port: port, "silence_ms=3500&count=1", requestID: "quiet")
                #expect(status == 200)
                // The client's own 5 s receive timeout, not the server, ended this stream in two
                // loaded runs (3.5 s of silence plus a starved machine): the client waits longer,
                // and a close by the server still fails the test at once.
                s.setTimeout(30)
                var text = ""
                while let chunk = try s.readChunk() { text += String(decoding: chunk, as: UTF8.self) }
                #expect(text.hasSuffix("event: done\nid: 3\ndata: {\"n\":1}\n\n"))
            }
        }
    }

    /// Per-IP: libmicrohttpd accepts and resets the extra connection at once. Total: it stops
    /// accepting, so the extra connection waits in the listen backlog until a slot frees up.
    @Test func connectionLimitsRefuseOrHoldExtraConnections() async throws {
        for perIP in [true, false] {
            try await withServer(
                {
                    if perIP { $0.perIPConnectionLimit = 2 } else { $0.connectionLimit = 2 }
                    // No reserve: this is about libmicrohttpd's limits alone.
                    $0.connectionReserve = 0
                }, routes: standardRoutes(producers)
            ) { _, port, metrics in
                try await offPool {
                    let a = try TestClient(port: port)
                    let b = try TestClient(port: port)
                    #expect(try a.request("GET", "/hello").status == 200)
                    #expect(try b.request("GET", "/hello").status == 200)
                    let c = try TestClient(port: port, timeout: 1)
                    c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                    if perIP {
                        #expect(throws: (any Error).self) { _ = try c.readHead() }
                        #expect(errno != EAGAIN)  // closed, not a timeout
                    } else {
                        #expect(throws: (any Error).self) { _ = try c.readHead() }
                        #expect(errno == EAGAIN)  // not answered: held in the backlog
                        a.close()
                        c.setTimeout(3)
                        #expect(try c.readResponse().status == 200)
                    }
                    b.close()
                    // Let libmicrohttpd see the close before the next connection arrives.
                    let deadline = ContinuousClock.now + .seconds(2)
                    while (metrics.value("inferd_open_connections") ?? 0) > 1 && ContinuousClock.now < deadline {
                        Thread.sleep(forTimeInterval: 0.005)
                    }
                    let d = try TestClient(port: port)
                    #expect(try d.request("GET", "/hello").status == 200)
                }
            }
        }
    }

    /// No time passes by the server's time source, so only the cancel can end the drain (a drain
    /// that waited for its time would hang here until the time limit).
    @Test(.timeLimit(.minutes(1))) func cancellingShutdownSkipsTheDrain() async throws {
        let router = Router()
        let logs = LogCapture()
        standardRoutes(producers)(router)
        let server = HTTPServer(
            configuration: .init(port: 0, drainSeconds: 30), router: router, logger: logs.logger, metrics: Metrics(),
            clock: ManualTimeSource())
        try server.start()
        let port = server.boundPort
        let (client, _, _) = try await offPool { try openStream(port: port, "interval_ms=50", requestID: "drain-skip") }
        let shutdown = Task { await server.shutdown() }
        #expect(await eventually { logs.matching("http server draining").count == 1 })
        shutdown.cancel()
        await shutdown.value
        #expect(producers["drain-skip"]?.snapshot.reason == .shutdown)
        client.close()
    }
}
