import Foundation
import Glibc
import Telemetry
import TestSupport
import Testing

@testable import HTTPServer

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
        router.get("/teapot") { _ in throw HTTPError(status: 418, message: "short and stout", type: "x", code: "teapot")
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

/// Opens an SSE request and returns the client after reading the response head.
func openStream(port: Int, _ query: String, requestID: String, receiveBuffer: Int? = nil) throws -> (
    TestClient, Int, [(String, String)]
) {
    let client = try TestClient(port: port, receiveBuffer: receiveBuffer)
    client.send("GET /stream?\(query) HTTP/1.1\r\nHost: x\r\nX-Request-Id: \(requestID)\r\n\r\n")
    let (status, headers) = try client.readHead()
    return (client, status, headers)
}

@Suite("HTTP server over real sockets", .serialized)
struct HTTPServerSocketTests {
    let producers = ProducerLog()

    @Test func routingAnswers404And405WithAllow() async throws {
        try await withServer(routes: standardRoutes(producers)) { _, port, metrics in
            try await offPool {
                let c = try TestClient(port: port)
                let notFound = try c.request("GET", "/nope")
                #expect(notFound.status == 404)
                #expect(notFound.errorCode == "not_found")
                #expect(notFound.header("X-Request-Id") != nil)
                let notAllowed = try c.request("POST", "/hello")
                #expect(notAllowed.status == 405)
                #expect(notAllowed.errorCode == "method_not_allowed")
                #expect(notAllowed.header("Allow") == "GET")
                let put = try c.request("PUT", "/sessions/abc")
                #expect(put.status == 405)
                #expect(put.header("Allow") == "GET, DELETE")
                let param = try c.request("GET", "/sessions/abc")
                #expect(param.status == 200)
                #expect(param.json?["id"] as? String == "abc")
                let teapot = try c.request("GET", "/teapot")
                #expect(teapot.status == 418)
                #expect(teapot.errorCode == "teapot")
            }
            #expect(
                await eventually {
                    metrics.value(
                        "inferd_http_requests_total", labels: ["route": "unmatched", "method": "GET", "status": "404"])
                        == 1
                })
            #expect(
                metrics.value(
                    "inferd_http_requests_total", labels: ["route": "/sessions/{id}", "method": "GET", "status": "200"])
                    == 1)
        }
    }

    @Test func middlewareWrapsEveryRouteAndItsValuesAreLogged() async throws {
        let logs = LogCapture()
        try await withServer(
            routes: { router in
                standardRoutes(producers)(router)
                router.use { request, next in
                    if request.headers["X-Deny"] != nil {
                        return .error(HTTPError(status: 401, message: "no", type: "t", code: "denied"))
                    }
                    request.context.set("caller", "c-\(request.route)", logged: true)
                    request.context.set("hidden", "secret-value")
                    return try await next(request)
                }
            }, logs: logs
        ) { _, port, _ in
            try await offPool {
                let c = try TestClient(port: port)
                #expect(try c.request("GET", "/hello").status == 200)
                #expect(try c.request("GET", "/hello", headers: [("X-Deny", "1")]).errorCode == "denied")
                #expect(try c.request("GET", "/nope", headers: [("X-Deny", "1")]).errorCode == "denied")
                #expect(try c.request("GET", "/nope").status == 404)
            }
            #expect(await eventually { logs.matching("request completed").count == 4 })
            #expect(logs.matching("caller=c-/hello").count == 1)
            #expect(logs.matching("caller=c-unmatched").count == 1)
            #expect(logs.matching("secret-value").isEmpty)
        }
    }

    @Test func jsonEchoAndBodyErrors() async throws {
        let logs = LogCapture()
        try await withServer(routes: standardRoutes(producers), logs: logs) { _, port, _ in
            try await offPool {
                let c = try TestClient(port: port)
                let json = [("Content-Type", "application/json; charset=utf-8")]
                let ok = try c.request("POST", "/echo", headers: json, body: Array(#"{"message":"héllo","n":3}"#.utf8))
                #expect(ok.status == 200)
                #expect(try JSONDecoder().decode(Echo.self, from: Data(ok.body)) == Echo(message: "héllo", n: 3))

                let truncated = try c.request(
                    "POST", "/echo", headers: json, body: Array(#"{"message":"hi","n":"#.utf8))
                #expect(truncated.status == 400)
                #expect(truncated.errorCode == "invalid_json")

                let badUTF8 = try c.request(
                    "POST", "/echo", headers: json,
                    body: Array(#"{"message":""#.utf8) + [0xC3, 0x28] + Array(#"","n":1}"#.utf8))
                #expect(badUTF8.status == 400)
                #expect(badUTF8.errorCode == "invalid_json")
                #expect(badUTF8.text.contains("UTF-8"))

                let wrongType = try c.request(
                    "POST", "/echo", headers: [("Content-Type", "text/plain")],
                    body: Array(#"{"message":"hi","n":1}"#.utf8))
                #expect(wrongType.status == 415)

                let missing = try c.request("POST", "/echo", headers: json)
                #expect(missing.status == 400)

                let boom = try c.request("GET", "/boom")
                #expect(boom.status == 500)
                #expect(boom.errorCode == "internal_error")
            }
        }
        #expect(logs.matching("request cancelled").isEmpty)
        #expect(logs.matching("handler failed").count == 1)
        #expect(logs.matching("error [test] handler failed").count == 1)
        let completed = logs.matching("request completed")
        #expect(completed.count == 6)
        #expect(
            completed.contains { $0.contains("status=415") && $0.contains("method=POST") && $0.contains("path=/echo") })
        #expect(completed.allSatisfy { $0.contains("duration_ms=") && $0.contains("request_id=") })
    }

    @Test func bodyOverLimitIs413WithContentLengthAndChunked() async throws {
        try await withServer(routes: standardRoutes(producers)) { _, port, _ in
            try await offPool {
                // Content-Length: refused before the body is read.
                let c = try TestClient(port: port)
                c.send(
                    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(2 << 20)\r\n\r\n"
                )
                let r = try c.readResponse()
                #expect(r.status == 413)
                #expect(r.errorCode == "payload_too_large")
                #expect(r.header("X-Request-Id") != nil)

                // Chunked: enforced while data arrives.
                let d = try TestClient(port: port)
                d.send(
                    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 64 << 10)
                for _ in 0..<32 {
                    guard d.send(Array("10000\r\n".utf8) + chunk + Array("\r\n".utf8)) else { break }
                }
                d.send("0\r\n\r\n")
                let r2 = try d.readResponse()
                #expect(r2.status == 413)

                // Still serving.
                let e = try TestClient(port: port)
                #expect(try e.request("GET", "/hello").status == 200)
            }
        }
    }

    @Test func oversizedHeadersAreRefusedAndServerKeepsServing() async throws {
        try await withServer({ $0.headerMemoryLimitBytes = 8 << 10 }, routes: standardRoutes(producers)) { _, port, _ in
            try await offPool {
                let c = try TestClient(port: port)
                let big = String(repeating: "v", count: 16 << 10)
                c.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: \(big)\r\n\r\n")
                var refused = false
                if let head = try? c.readHead() {
                    refused = head.status >= 400
                } else {
                    refused = true  // closed without an answer
                }
                #expect(refused)
                let d = try TestClient(port: port)
                #expect(try d.request("GET", "/hello").status == 200)
            }
        }
    }

    @Test func halfSentRequestIsDroppedAfterTimeout() async throws {
        try await withServer({ $0.connectionTimeoutSeconds = 1 }, routes: standardRoutes(producers)) { _, port, _ in
            let elapsed = try await offPool {
                let c = try TestClient(port: port, timeout: 5)
                c.send("GET /hello HTTP/1.1\r\nHost: x\r\n")  // never finished
                let start = ContinuousClock.now
                let closed = c.waitForClose()
                return (closed, ContinuousClock.now - start)
            }
            #expect(elapsed.0)
            #expect(elapsed.1 < .seconds(4))
            print("slowloris connection dropped after \(elapsed.1)")
        }
    }

    @Test func requestIDIsEchoedGeneratedAndValidated() async throws {
        try await withServer(routes: standardRoutes(producers)) { _, port, _ in
            try await offPool {
                let c = try TestClient(port: port)
                let echoed = try c.request("GET", "/hello", headers: [("X-Request-Id", "abc.DEF_123-x")])
                #expect(echoed.header("X-Request-Id") == "abc.DEF_123-x")
                let generated = try c.request("GET", "/hello")
                let id = generated.header("X-Request-Id") ?? ""
                #expect(id.count >= 16)
                #expect(HTTPServer.isValidRequestID(id))
                let invalid = try c.request("GET", "/nope", headers: [("X-Request-Id", "bad id!")])
                #expect(invalid.header("X-Request-Id") != "bad id!")
                #expect(HTTPServer.isValidRequestID(invalid.header("X-Request-Id") ?? ""))
                let tooLong = String(repeating: "a", count: 65)
                let long = try c.request("GET", "/hello", headers: [("X-Request-Id", tooLong)])
                #expect(long.header("X-Request-Id") != tooLong)
            }
        }
    }

    @Test func eventStreamFormatAndHeaders() async throws {
        try await withServer(routes: { router in
            router.get("/events") { _ in
                .eventStream { stream in
                    stream.send(event: "queued", data: "{\"position\":1}")
                    stream.sendSnapshot(event: "snapshot", data: "line1\nline2")
                    stream.send(event: "done", data: "{}")
                }
            }
        }) { server, port, metrics in
            let (head, body) = try await offPool {
                let c = try TestClient(port: port)
                c.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                let r = try c.readResponse()
                return ((r.status, r.headers), r.text)
            }
            let r = RawResponse(status: head.0, headers: head.1, body: [])
            #expect(r.status == 200)
            #expect(r.header("Content-Type") == "text/event-stream")
            #expect(r.header("Cache-Control") == "no-cache")
            #expect(r.header("Transfer-Encoding")?.lowercased() == "chunked")
            #expect(r.header("X-Request-Id") != nil)
            #expect(
                body
                    == "event: queued\nid: 1\ndata: {\"position\":1}\n\n"
                    + "event: snapshot\nid: 2\ndata: line1\ndata: line2\n\n"
                    + "event: done\nid: 3\ndata: {}\n\n")
            #expect(await eventually { metrics.value("inferd_sse_events_sent_total") == 3 })
            #expect(await eventually { server.runningTaskCount == 0 })
        }
    }

    @Test func abruptCloseWhileEventsFlowCancelsTheTask() async throws {
        let logs = LogCapture()
        try await withServer(routes: standardRoutes(producers), logs: logs) { server, port, metrics in
            var latencies: [Double] = []
            for round in 0..<7 {
                let id = "flow-\(round)"
                let closedAt = try await offPool {
                    let (c, status, _) = try openStream(port: port, "interval_ms=5", requestID: id)
                    guard status == 200 else { throw ClientError(description: "status \(status)") }
                    for _ in 0..<3 { _ = try c.readChunk() }
                    let t = ContinuousClock.now
                    c.close()
                    return t
                }
                let producer = try #require(producers[id])
                #expect(await eventually(timeout: .seconds(3)) { producer.snapshot.cancelSeenAt != nil })
                let rec = producer.snapshot
                #expect(rec.reason == .clientDisconnected)
                #expect(!rec.finishedNormally)
                let after = rec.emittedTimes.filter { $0 > closedAt }.count
                #expect(after <= 10)
                if let seen = rec.cancelSeenAt { latencies.append((seen - closedAt).milliseconds) }
            }
            print(
                "disconnect→cancel while streaming (ms): \(latencies.map { String(format: "%.1f", $0) }) median \(median(latencies))"
            )
            #expect(await eventually { server.runningTaskCount == 0 && server.watchedConnectionCount == 0 })
            #expect(metrics.value("inferd_cancellations_total", labels: ["reason": "client_disconnected"]) == 7)
        }
        let cancelled = logs.matching("request cancelled")
        #expect(cancelled.count == 7)
        #expect(
            cancelled.allSatisfy { $0.contains("reason=client_disconnected") && $0.contains("events_after_cancel=") })
    }

    @Test func closeDuringSilenceCancelsLongBeforeSilenceEnds() async throws {
        try await withServer(routes: standardRoutes(producers)) { server, port, _ in
            var latencies: [Double] = []
            for round in 0..<3 {
                let id = "silent-\(round)"
                let closedAt = try await offPool {
                    let (c, _, _) = try openStream(port: port, "silence_ms=5000", requestID: id)
                    _ = try c.readChunk()  // "started"
                    Thread.sleep(forTimeInterval: 0.1)
                    let t = ContinuousClock.now
                    c.close()
                    return t
                }
                let producer = try #require(producers[id])
                #expect(await eventually(timeout: .seconds(3)) { producer.snapshot.cancelSeenAt != nil })
                let seen = try #require(producer.snapshot.cancelSeenAt)
                #expect(seen - closedAt < .seconds(1))
                #expect(producer.snapshot.emitted == 0)
                latencies.append((seen - closedAt).milliseconds)
            }
            print(
                "disconnect→cancel during silence (ms): \(latencies.map { String(format: "%.1f", $0) }) median \(median(latencies))"
            )
            #expect(await eventually { server.runningTaskCount == 0 })
        }
    }

    @Test func slowReaderKeepsServerBufferBoundedAndGetsNewestSnapshotThenTerminal() async throws {
        try await withServer(routes: standardRoutes(producers)) { _, port, metrics in
            let id = "slow-reader"
            // ~1 KiB snapshots every 2 ms for ~2.4 s: megabytes the client never keeps up with.
            let (c, _, _) = try await offPool {
                try openStream(port: port, "interval_ms=2&count=1200&pad=1000", requestID: id, receiveBuffer: 4096)
            }
            let producer = try #require(producers[id])
            try await offPool {
                for _ in 0..<25 {  // 1 byte per 100 ms
                    _ = c.readByte()
                    Thread.sleep(forTimeInterval: 0.1)
                }
            }
            let peakWhileSlow = producer.snapshot.stream?.peakBufferedBytes ?? -1
            #expect(await eventually(timeout: .seconds(10)) { producer.snapshot.finishedNormally })
            let emitted = producer.snapshot.emitted
            // Now read the rest fast, up to the chunked terminator.
            let raw = try await offPool { () -> String in
                c.setTimeout(5)
                while !c.buffer.suffix(7).elementsEqual(Array("\r\n0\r\n\r\n".utf8)) {
                    guard c.fill() else { break }
                }
                return String(decoding: c.buffer, as: UTF8.self)
            }
            let peak = producer.snapshot.stream?.peakBufferedBytes ?? -1
            let dropped = metrics.value("inferd_sse_events_dropped_total") ?? 0
            print(
                "slow reader: \(emitted) snapshots produced, \(Int(dropped)) conflated; peak server buffer \(peak) bytes"
            )
            #expect(peakWhileSlow > 0)
            #expect(peak < 64 << 10)  // the producer emitted over a megabyte
            #expect(dropped > 100)
            // Strip chunk framing (event data never contains CRLF), then look at the last two events.
            let text = raw.replacingOccurrences(of: "\r\n[0-9a-fA-F]+\r\n", with: "", options: .regularExpression)
            var reader = SSEReader()
            reader.text = text
            let events = reader.events
            #expect(events.count >= 2)
            if events.count >= 2 {
                let last = events[events.count - 1]
                let snapshot = events[events.count - 2]
                #expect(last.name == "done")
                #expect(snapshot.name == "snapshot")
                #expect(snapshot.data.hasPrefix("{\"n\":\(emitted),"))
            }
        }
    }
}

// Lifecycle tests share the serialized suite: the fd-count check needs no other sockets opening.
extension HTTPServerSocketTests {
    @Test func heartbeatPingsDuringSilence() async throws {
        try await withServer({ $0.heartbeatSeconds = 0.2 }, routes: standardRoutes(producers)) { _, port, _ in
            let text = try await offPool { () -> String in
                let (c, _, _) = try openStream(port: port, "silence_ms=1100&count=1", requestID: "hb")
                var text = ""
                while let chunk = try c.readChunk() { text += String(decoding: chunk, as: UTF8.self) }
                return text
            }
            let pings = text.components(separatedBy: ": ping\n\n").count - 1
            print("heartbeat: \(pings) pings in 1.1 s of silence at 0.2 s")
            #expect(pings >= 3)
            #expect(pings <= 7)
            #expect(text.hasPrefix("event: started\nid: 1\n"))
            #expect(text.hasSuffix("event: done\nid: 3\ndata: {\"n\":1}\n\n"))
        }
    }

    @Test func longNonStreamingHandlerIsCancelledWhenClientLeaves() async throws {
        let seen = Locked<(ContinuousClock.Instant?, CancellationReason?)>((nil, nil))
        try await withServer(routes: { router in
            router.post("/generate") { req in
                do {
                    try await Task.sleep(for: .seconds(5))
                } catch {
                    let reason = req.context.cancellationReason
                    seen.withLock { $0 = (.now, reason) }
                    throw error
                }
                return .text("done")
            }
        }) { server, port, _ in
            let closedAt = try await offPool {
                let c = try TestClient(port: port)
                c.send("POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
                Thread.sleep(forTimeInterval: 0.1)
                let t = ContinuousClock.now
                c.close()
                return t
            }
            #expect(await eventually(timeout: .seconds(2)) { seen.withLock { $0.0 } != nil })
            let (at, reason) = seen.withLock { $0 }
            #expect(reason == .clientDisconnected)
            if let at {
                #expect(at - closedAt < .seconds(1))
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
        try await withServer(routes: standardRoutes(producers)) { server, port, metrics in
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

    @Test func gracefulShutdownDrainsThenCancelsWithReasonShutdown() async throws {
        let metrics = Metrics()
        let logs = LogCapture()
        let router = Router()
        standardRoutes(producers)(router)
        let server = HTTPServer(
            configuration: .init(port: 0, drainSeconds: 1), router: router, logger: logs.logger, metrics: metrics)
        try server.start()
        let port = server.boundPort
        let (quick, _, _) = try await offPool {
            try openStream(port: port, "interval_ms=50&count=6", requestID: "quick")
        }
        let (endless, _, _) = try await offPool { try openStream(port: port, "interval_ms=50", requestID: "endless") }
        let started = ContinuousClock.now
        let shutdown = Task { await server.shutdown() }
        func readAll(_ c: TestClient) async throws -> [SSEReader.Event] {
            try await offPool {
                var reader = SSEReader()
                while let chunk = try c.readChunk() { reader.text += String(decoding: chunk, as: UTF8.self) }
                return reader.events
            }
        }
        async let quickEvents = readAll(quick)
        async let endlessEvents = readAll(endless)
        let (q, e) = try await (quickEvents, endlessEvents)
        await shutdown.value
        let took = ContinuousClock.now - started
        print("graceful shutdown took \(took)")
        #expect(q.last?.name == "done")
        #expect(producers["quick"]?.snapshot.finishedNormally == true)
        #expect(e.last?.name == "terminal")
        #expect(e.last?.data.contains("shutdown") == true)
        #expect(producers["endless"]?.snapshot.reason == .shutdown)
        #expect(took >= .milliseconds(900))
        #expect(took < .seconds(4))
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
}

extension HTTPServerSocketTests {
    @Test func longRequestsOutliveTheConnectionTimeoutBecauseTheyAreSuspended() async throws {
        try await withServer(
            {
                $0.connectionTimeoutSeconds = 1
                $0.heartbeatSeconds = 0
            },
            routes: { router in
                standardRoutes(producers)(router)
                router.get("/slow") { _ in
                    try await Task.sleep(for: .milliseconds(2200))
                    return .text("finally")
                }
            }
        ) { _, port, _ in
            try await offPool {
                let c = try TestClient(port: port)
                let r = try c.request("GET", "/slow")
                #expect(r.status == 200)
                #expect(r.text == "finally")
                let (s, status, _) = try openStream(port: port, "silence_ms=2200&count=1", requestID: "quiet")
                #expect(status == 200)
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
}

extension HTTPServerSocketTests {
    @Test func cancellingShutdownSkipsTheDrain() async throws {
        let router = Router()
        standardRoutes(producers)(router)
        let server = HTTPServer(
            configuration: .init(port: 0, drainSeconds: 30), router: router, logger: LogCapture().logger,
            metrics: Metrics())
        try server.start()
        let port = server.boundPort
        let (client, _, _) = try await offPool { try openStream(port: port, "interval_ms=50", requestID: "drain-skip") }
        let started = ContinuousClock.now
        let shutdown = Task { await server.shutdown() }
        try await Task.sleep(for: .milliseconds(200))
        shutdown.cancel()
        await shutdown.value
        let took = ContinuousClock.now - started
        #expect(took < .seconds(5))
        #expect(producers["drain-skip"]?.snapshot.reason == .shutdown)
        client.close()
    }
}
