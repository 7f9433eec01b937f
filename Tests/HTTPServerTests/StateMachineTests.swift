import Foundation
import Telemetry
import TestSupport
import Testing

@testable import HTTPServer

@Suite("Request lifecycle state machine (no I/O)")
struct ExchangeStateTests {
    let head = ResponseHead(status: 200, headers: [], body: [1, 2, 3])

    @Test func slowHandlerSuspendsThenResumesAndQueues() {
        var s = ExchangeState()
        s.started()
        #expect(s.poll() == .suspend)
        #expect(s.suspended)
        #expect(s.respond(head) == true)  // resume the connection
        #expect(!s.suspended)
        #expect(s.poll() == .queue)
        #expect(s.phase == .responding)
        #expect(s.poll() == .none)
    }

    @Test func fastHandlerAnswersBeforeTheConnectionSuspends() {
        var s = ExchangeState()
        s.started()
        #expect(s.respond(head) == false)  // not suspended: nothing to resume
        #expect(s.poll() == .queue)
    }

    @Test func streamReaderSuspendsWhenEmptyAndIsWokenByOutput() {
        var s = ExchangeState()
        s.started()
        _ = s.respond(ResponseHead(status: 200, headers: [], body: nil))
        #expect(s.poll() == .queue)
        #expect(s.read(max: 100) == .suspend)
        s.sse.send(event: "e", data: "1")
        #expect(s.outputQueued(now: .now) == true)
        guard case .bytes(let b, let events) = s.read(max: 1000) else {
            Issue.record("expected bytes")
            return
        }
        #expect(String(decoding: b, as: UTF8.self) == "event: e\nid: 1\ndata: 1\n\n")
        #expect(events == 1)
        #expect(s.read(max: 100) == .suspend)
        #expect(s.finished() == true)
        #expect(s.read(max: 100) == .end)
    }

    @Test func outputWhileNotSuspendedDoesNotResume() {
        var s = ExchangeState()
        s.started()
        s.sse.send(event: "e", data: "1")
        #expect(s.outputQueued(now: .now) == false)
    }

    @Test func cancelRecordsTheFirstReasonOnly() {
        var s = ExchangeState()
        #expect(s.cancel(.shutdown) == .none)  // no Task yet
        s.started()
        s.sse.sendSnapshot(event: "s", data: "1")
        #expect(s.cancel(.clientDisconnected) == .cancelTask(.clientDisconnected))
        #expect(s.cancel(.shutdown) == .none)
        #expect(s.cancelReason == .clientDisconnected)
        #expect(s.eventsAtCancel == 1)
    }

    @Test func completionCancelsARunningTaskAndNeverResumesAfterwards() {
        var s = ExchangeState()
        s.started()
        #expect(s.poll() == .suspend)
        #expect(s.closed() == .cancelTask(.clientDisconnected))
        #expect(s.respond(head) == false)
        #expect(s.finished() == false)
        #expect(s.poll() == .none)
    }

    @Test func completionAfterTheTaskFinishedCancelsNothing() {
        var s = ExchangeState()
        s.started()
        _ = s.respond(head)
        _ = s.finished()
        #expect(s.closed() == .none)
        #expect(s.cancelReason == nil)
    }

    @Test func completionRightAfterAFullAnswerIsNotACancellation() {
        var s = ExchangeState()
        s.started()
        _ = s.respond(head)
        #expect(s.poll() == .queue)
        #expect(s.closed() == .none)  // the Task has not called finished() yet, but it is done
        #expect(s.cancelReason == nil)
    }

    @Test func hangUpAfterACompleteAnswerIsNotACancellation() {
        var s = ExchangeState()
        s.started()
        _ = s.respond(head)
        // The client read the answer and closed before the Task returned.
        #expect(s.cancel(.clientDisconnected) == .none)
        #expect(s.cancel(.shutdown) == .cancelTask(.shutdown))
    }

    @Test func hangUpDuringAStreamIsACancellation() {
        var s = ExchangeState()
        s.started()
        _ = s.respond(ResponseHead(status: 200, headers: [], body: nil))
        #expect(s.cancel(.clientDisconnected) == .cancelTask(.clientDisconnected))
    }

    @Test func directAnswerSkipsTheTask() {
        var s = ExchangeState()
        s.answerDirectly(ResponseHead(status: 413, headers: [], body: []))
        #expect(s.phase == .responding)
        #expect(s.head?.status == 413)
        #expect(s.closed() == .none)
    }
}

@Suite("SSE queue and format (no I/O)")
struct SSEQueueTests {
    func drain(_ q: inout SSEQueue) -> String {
        var out: [UInt8] = []
        while case .bytes(let b, _) = q.read(max: 7) { out += b }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func formatSplitsMultilineDataAndCountsIDs() {
        #expect(
            String(decoding: SSEFormat.encode(event: "x", id: 4, data: "a\nb\r\nc\rd"), as: UTF8.self)
                == "event: x\nid: 4\ndata: a\ndata: b\ndata: c\ndata: d\n\n")
        #expect(
            String(decoding: SSEFormat.encode(event: "x", id: 1, data: ""), as: UTF8.self)
                == "event: x\nid: 1\ndata: \n\n")
        #expect(
            String(decoding: SSEFormat.encode(event: "a\nb", id: 1, data: "{}"), as: UTF8.self).hasPrefix("event: ab\n")
        )
    }

    @Test func snapshotsConflateButOrderedEventsAreKept() {
        var q = SSEQueue()
        q.send(event: "queued", data: "q")
        #expect(q.sendSnapshot(event: "snap", data: "1") == false)
        #expect(q.sendSnapshot(event: "snap", data: "2") == true)
        q.send(event: "started", data: "s")
        #expect(q.sendSnapshot(event: "snap", data: "3") == true)
        q.send(event: "done", data: "d")
        q.finish()
        #expect(
            drain(&q)
                == "event: queued\nid: 1\ndata: q\n\nevent: started\nid: 2\ndata: s\n\n"
                + "event: snap\nid: 3\ndata: 3\n\nevent: done\nid: 4\ndata: d\n\n")
        #expect(q.read(max: 10) == .end)
    }

    @Test func bufferStaysBoundedUnderManySnapshots() {
        var q = SSEQueue()
        let payload = String(repeating: "x", count: 1000)
        for i in 0..<10_000 { q.sendSnapshot(event: "snap", data: "\(i)\(payload)") }
        #expect(q.bufferedBytes < 1100)
        #expect(q.peakBufferedBytes < 1100)
        #expect(q.eventsAccepted == 10_000)
    }

    @Test func heartbeatIsAComment() {
        var q = SSEQueue()
        q.heartbeat()
        guard case .bytes(let b, let events) = q.read(max: 100) else {
            Issue.record("expected bytes")
            return
        }
        #expect(String(decoding: b, as: UTF8.self) == ": ping\n\n")
        #expect(events == 0)
        #expect(q.read(max: 100) == .empty)
    }

    @Test func nothingIsAcceptedAfterFinish() {
        var q = SSEQueue()
        q.finish()
        q.send(event: "late", data: "x")
        #expect(q.read(max: 100) == .end)
    }
}

@Suite("Router, errors, request decoding, metrics (no I/O)")
struct UnitTests {
    @Test func routerPrefersLiteralsAndReportsAllowedMethods() {
        let r = Router()
        r.get("/v1/sessions/{id}") { _ in .text("param") }
        r.get("/v1/sessions/active") { _ in .text("literal") }
        r.post("/v1/sessions/{id}/responses") { _ in .text("post") }
        r.delete("/v1/sessions/{id}") { _ in .text("delete") }
        guard case .found(let p, _, let params) = r.match(.get, "/v1/sessions/active") else {
            Issue.record("no match")
            return
        }
        #expect(p == "/v1/sessions/active")
        #expect(params.isEmpty)
        guard case .found(let p2, _, let params2) = r.match(.post, "/v1/sessions/s1/responses") else {
            Issue.record("no match")
            return
        }
        #expect(p2 == "/v1/sessions/{id}/responses")
        #expect(params2 == ["id": "s1"])
        guard case .methodNotAllowed(let allowed) = r.match(.put, "/v1/sessions/s1") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.get, .delete])
        guard case .notFound = r.match(.get, "/v2") else {
            Issue.record("expected 404")
            return
        }
        guard case .found = r.match(.head, "/v1/sessions/x") else {
            Issue.record("HEAD should use GET")
            return
        }
    }

    struct Payload: Decodable {
        var n: Int
    }

    func request(_ body: String, contentType: String? = "application/json") -> HTTPRequest {
        HTTPRequest(
            id: "r", method: .post, path: "/",
            headers: HTTPHeaders(contentType.map { [("content-type", $0)] } ?? []), body: Array(body.utf8))
    }

    func decodeError(_ r: HTTPRequest) -> HTTPError? {
        do {
            _ = try r.decodeJSON(Payload.self)
            return nil
        } catch {
            return error as? HTTPError
        }
    }

    @Test func decodeJSONMapsFailures() throws {
        #expect(try request(#"{"n":2}"#).decodeJSON(Payload.self).n == 2)
        #expect(
            try request(#"{"n":2}"#, contentType: "Application/JSON; charset=utf-8").decodeJSON(Payload.self).n == 2)
        #expect(decodeError(request(#"{"n":2}"#, contentType: "text/plain"))?.status == 415)
        #expect(decodeError(request(#"{"n":2}"#, contentType: nil))?.status == 415)
        #expect(decodeError(request(""))?.code == .missingBody)
        let truncated = decodeError(request(#"{"n":"#))
        #expect(truncated?.status == 400)
        #expect(truncated?.code == .invalidJSON)
        #expect(decodeError(request(#"{"m":1}"#))?.code == .invalidRequest)
        // Valid JSON with a value its field cannot hold is the value's fault, named, never "not JSON".
        // (Linux Foundation does not say which field a number failed to fit, so `param` is only
        // checked where the decoder reports a path.)
        let wrongType = decodeError(request(#"{"n":"x"}"#))
        #expect(wrongType?.code == .invalidValue && wrongType?.param == "n")
        for body in [#"{"n":3.5}"#, #"{"n":1e300}"#] {
            let e = decodeError(request(body))
            #expect(e?.status == 400 && e?.code == .invalidValue, "\(body): \(String(describing: e))")
            #expect(e?.message.contains("not valid JSON") == false)
        }
        #expect(decodeError(request(#"{"m":1}"#))?.param == "n")
        var bad = request("")
        bad = HTTPRequest(id: "r", method: .post, path: "/", headers: bad.headers, body: [0x7B, 0xFF, 0x7D])
        #expect(decodeError(bad)?.message.contains("UTF-8 (byte offset 1)") == true)
    }

    @Test func jsonNestingIsCheckedBeforeDecoding() throws {
        func deep(_ n: Int) -> String { String(repeating: "[", count: n) + String(repeating: "]", count: n) }
        #expect(HTTPRequest.nestingDepth(Array(deep(5).utf8), stopAfter: 64) == 5)
        #expect(HTTPRequest.nestingDepth(Array(#"{"a":"[[[[","b":[{"c":"\"]"}]}"#.utf8), stopAfter: 64) == 3)
        #expect(HTTPRequest.nestingDepth(Array(deep(1_000_000).utf8), stopAfter: 10) == 11)
        #expect(HTTPRequest.nestingDepth(Array("]]]][[".utf8), stopAfter: 64) == 2)
        var r = request(#"{"n":2,"x":"# + deep(3) + "}")
        r.maxJSONDepth = 4
        #expect(try r.decodeJSON(Payload.self).n == 2)
        r.maxJSONDepth = 3
        #expect(decodeError(r)?.code == .jsonTooDeep)
    }

    @Test func headersAreCaseInsensitive() {
        let h = HTTPHeaders([("X-Request-Id", "a"), ("content-type", "b")])
        #expect(h["x-request-id"] == "a")
        #expect(h["Content-Type"] == "b")
        #expect(h["missing"] == nil)
    }

    @Test func errorResponseShape() throws {
        let r = HTTPResponse.error(.notFound("nope"))
        #expect(r.status == 404)
        guard case .bytes(let b) = r.body else {
            Issue.record("expected bytes")
            return
        }
        let obj = try JSONSerialization.jsonObject(with: Data(b)) as? [String: [String: String]]
        #expect(obj?["error"] == ["message": "nope", "type": "not_found_error", "code": "not_found"])
    }

    @Test func requestIDValidation() {
        #expect(HTTPServer.isValidRequestID("a"))
        #expect(HTTPServer.isValidRequestID("A.b_c-9"))
        #expect(HTTPServer.isValidRequestID(String(repeating: "z", count: 64)))
        #expect(!HTTPServer.isValidRequestID(String(repeating: "z", count: 65)))
        #expect(!HTTPServer.isValidRequestID(""))
        #expect(!HTTPServer.isValidRequestID("a b"))
        #expect(!HTTPServer.isValidRequestID("é"))
        #expect(HTTPServer.generateRequestID().count == 32)
    }

    @Test func metricsRenderPrometheusText() {
        let m = Metrics()
        let c = m.counter("inferd_x_total", help: "Things.", labels: ["b": "2", "a": "q\"uote"])
        c.increment()
        c.increment(by: 2)
        m.counter("inferd_x_total", help: "Things.", labels: ["a": "q\"uote", "b": "2"]).increment()
        let g = m.gauge("inferd_g", help: "A gauge.")
        g.set(5)
        g.add(-1.5)
        #expect(
            m.render()
                == """
                # HELP inferd_g A gauge.
                # TYPE inferd_g gauge
                inferd_g 3.5
                # HELP inferd_x_total Things.
                # TYPE inferd_x_total counter
                inferd_x_total{a="q\\"uote",b="2"} 4

                """)
        #expect(m.value("inferd_x_total", labels: ["a": "q\"uote", "b": "2"]) == 4)
    }

    @Test func histogramsRenderCumulativeBucketsSumAndCount() {
        let m = Metrics()
        let h = m.histogram("inferd_h_seconds", help: "Waits.", labels: ["route": "r"], buckets: [0.5, 0.1, 1])
        h.observe(0.1)  // on a bound: counted in that bucket (`le` is inclusive)
        h.observe(0.3)
        h.observe(0.2, count: 2)
        h.observe(7)  // above every bound: only +Inf
        h.observe(.nan)  // not a value: not counted
        #expect(m.histogram("inferd_h_seconds", help: "Waits.", labels: ["route": "r"]).count == 5)
        #expect(
            m.render()
                == """
                # HELP inferd_h_seconds Waits.
                # TYPE inferd_h_seconds histogram
                inferd_h_seconds_bucket{le="0.1",route="r"} 1
                inferd_h_seconds_bucket{le="0.5",route="r"} 4
                inferd_h_seconds_bucket{le="1",route="r"} 4
                inferd_h_seconds_bucket{le="+Inf",route="r"} 5
                inferd_h_seconds_sum{route="r"} 7.8
                inferd_h_seconds_count{route="r"} 5

                """)
    }

    @Test func metricsAreThreadSafe() async {
        let m = Metrics()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<8 {
                group.addTask {
                    for _ in 0..<1000 { m.counter("c", help: "h", labels: ["k": "\(i % 2)"]).increment() }
                }
            }
        }
        #expect(m.value("c", labels: ["k": "0"]) == 4000)
        #expect(m.value("c", labels: ["k": "1"]) == 4000)
    }
}
