import Foundation
import Glibc
import Telemetry
import TestSupport
import Testing
import Timekeeping

@testable import HTTPServer

// Event streams and what a hang-up does to them.
extension HTTPServerSocketTests {
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

    /// The test decides time: a ping is due after exactly `heartbeatSeconds` of silence by the
    /// server's time source, and the real time the machine takes does not count.
    @Test(.timeLimit(.minutes(1))) func heartbeatPingsDuringSilence() async throws {
        let clock = ManualTimeSource()
        let gate = Gate()
        let routes: (Router) -> Void = { router in
            router.get("/silent") { _ in
                .eventStream { stream in
                    stream.send(event: "started", data: "{}")
                    await gate.wait()
                    stream.send(event: "done", data: "{}")
                }
            }
        }
        try await withServer({ $0.heartbeatSeconds = 10 }, routes: routes, clock: clock) { _, port, _ in
            let client = try await offPool { () -> TestClient in
                let c = try TestClient(port: port)
                c.send("GET /silent HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try c.readHead()
                return c
            }
            // The heartbeat sleeps until 10 s after the last output; each advance wakes it once,
            // and it sleeps again before the next. 10 s, 10 s: two pings; then 9.9 s: none.
            for step in [Duration.seconds(10), .seconds(10), .milliseconds(9900)] {
                #expect(await clock.waitForSleepers(1))
                clock.advance(by: step)
            }
            #expect(await clock.waitForSleepers(1))
            gate.open()
            let text = try await offPool { () -> String in
                var text = ""
                while let chunk = try client.readChunk() { text += String(decoding: chunk, as: UTF8.self) }
                return text
            }
            let pings = text.components(separatedBy: ": ping\n\n").count - 1
            #expect(pings == 2, "\(text)")
            #expect(text.hasPrefix("event: started\nid: 1\n"))
            #expect(text.hasSuffix("event: done\nid: 2\ndata: {}\n\n"))
        }
    }

}
