import Foundation
import Glibc
import Telemetry
import TestSupport
import Testing

@testable import HTTPServer

/// Deadlines, the reserve, the head gate and malformed heads, over real sockets.
extension HTTPServerSocketTests {
    /// A gate like the app's: `X-Key: good` is trusted, anything else on `/hello` or `/echo` is 401.
    static func keyGate(_ router: Router) {
        router.gate { head in
            if head.headers["X-Key"] == "good" { return .pass(trusted: true) }
            return .refuse(
                .error(HTTPError(status: 401, message: "key", type: "authentication_error", code: .missingAPIKey)))
        }
    }

    /// True when the server has not closed `c`: a read waits out a short timeout instead.
    static func stillOpen(_ c: TestClient) -> Bool {
        c.setTimeout(0.2)
        var byte: UInt8 = 0
        errno = 0
        let n = recv(c.fd, &byte, 1, 0)
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    /// The server's time source decides both deadlines: a trickling head is closed when the
    /// header deadline passes (not before, however long in real time), a trickling body when
    /// the body's does, and a keyed client is served meanwhile.
    @Test(.timeLimit(.minutes(1))) func tricklersAreClosedAtTheirDeadlinesWhileOthersAreServed() async throws {
        let clock = ManualTimeSource()
        let logs = LogCapture()
        try await withServer(
            {
                $0.headerTimeoutSeconds = 5
                $0.bodyTimeoutSeconds = 8
                $0.connectionTimeoutSeconds = 60
            }, routes: standardRoutes(producers), logs: logs, clock: clock
        ) { server, port, metrics in
            let head = try TestClient(port: port)
            head.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            let body = try TestClient(port: port)
            body.send(
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            // The body's deadline starts when the server has read its head, not at accept: wait
            // for that too, or a slow server thread starts it after the first advance.
            #expect(await eventually { server.connectionGuard.tracked == 2 })
            #expect(await eventually { server.connectionGuard.receivingBody == 1 })
            clock.advance(by: .milliseconds(4900))
            try await offPool {
                head.send("a")
                body.send("\"")
                let keyed = try TestClient(port: port)
                #expect(try keyed.request("GET", "/hello").status == 200)
                #expect(Self.stillOpen(head))
                #expect(Self.stillOpen(body))
            }
            clock.advance(by: .milliseconds(200))
            let headClosed = try await offPool { () -> Bool in
                head.setTimeout(5)
                return head.waitForClose()
            }
            #expect(headClosed)
            try await offPool {
                body.send("m")
                #expect(Self.stillOpen(body))
            }
            clock.advance(by: .seconds(3))
            let bodyClosed = try await offPool { () -> Bool in
                body.setTimeout(5)
                return body.waitForClose()
            }
            #expect(bodyClosed)
            #expect(metrics.value("inferd_connections_closed_early_total", labels: ["reason": "header_timeout"]) == 1)
            #expect(metrics.value("inferd_connections_closed_early_total", labels: ["reason": "body_timeout"]) == 1)
            #expect(logs.matching("connection closed early reason=header_timeout").count == 1)
        }
    }

    /// A kept-alive connection may stay silent for `connection_timeout_seconds` (libmicrohttpd's
    /// own limit) before the header time starts counting.
    @Test(.timeLimit(.minutes(1))) func aKeptAliveConnectionIsNotHeldToTheHeaderTimeAlone() async throws {
        let clock = ManualTimeSource()
        try await withServer(
            {
                $0.headerTimeoutSeconds = 5
                $0.connectionTimeoutSeconds = 60
            }, routes: standardRoutes(producers), clock: clock
        ) { server, port, _ in
            let c = try TestClient(port: port)
            try await offPool { () throws in #expect(try c.request("GET", "/hello").status == 200) }
            #expect(await eventually { server.exchangeCount == 0 })
            clock.advance(by: .seconds(30))
            try await offPool { () throws in
                #expect(Self.stillOpen(c))
                c.setTimeout(5)
                #expect(try c.request("GET", "/hello").status == 200)
            }
            #expect(await eventually { server.exchangeCount == 0 })
            clock.advance(by: .seconds(66))
            let closed = try await offPool { () -> Bool in
                c.setTimeout(5)
                return c.waitForClose()
            }
            #expect(closed)
        }
    }

    /// In real time: one byte every 200 ms kept a half-sent head open until libmicrohttpd's
    /// silence timeout, which never came; with a 1 s header deadline it is closed at 1 s.
    @Test(.timeLimit(.minutes(1))) func aRealTricklerIsClosedAtTheHeaderDeadline() async throws {
        try await withServer(
            {
                $0.headerTimeoutSeconds = 1
                $0.connectionTimeoutSeconds = 30
            }, routes: standardRoutes(producers)
        ) { _, port, _ in
            let elapsed = try await offPool { () -> Duration? in
                let c = try TestClient(port: port, timeout: 0.2)
                let start = ContinuousClock.now
                let line =
                    Array("GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8)
                    + Array(repeating: UInt8(ascii: "a"), count: 100)
                for byte in line {
                    guard c.send([byte]) else { return ContinuousClock.now - start }
                    var b: UInt8 = 0
                    errno = 0
                    let n = recv(c.fd, &b, 1, 0)
                    if n == 0 || (n < 0 && errno == ECONNRESET) { return ContinuousClock.now - start }
                }
                return nil
            }
            print("trickling head (1 byte / 200 ms) closed after \(elapsed.map { "\($0)" } ?? "never")")
            #expect(elapsed != nil)
            #expect(elapsed.map { $0 >= .milliseconds(900) && $0 < .seconds(3) } == true)
        }
    }

    /// Half-sent connections fill every untrusted place; the oldest make room, so a keyed client
    /// arriving afterwards is served at once (without the reserve it waited in the backlog).
    @Test(.timeLimit(.minutes(1))) func aKeyedClientIsServedWhileTricklersFillTheServer() async throws {
        try await withServer(
            {
                $0.connectionLimit = 10
                $0.connectionReserve = 4
                $0.perIPConnectionLimit = 0
                $0.headerTimeoutSeconds = 60
                $0.connectionTimeoutSeconds = 60
            },
            routes: { router in
                standardRoutes(producers)(router)
                Self.keyGate(router)
            }
        ) { server, port, metrics in
            var tricklers: [TestClient] = []
            for _ in 0..<10 {
                let t = try TestClient(port: port)
                t.send("GET /hello HTTP/1.1\r\nHost: x\r\n")
                tricklers.append(t)
                // One at a time, so "oldest" is the order they were opened in.
                let opened = tricklers.count
                #expect(await eventually { server.connectionGuard.tracked == min(opened, 6) })
            }
            #expect(server.connectionGuard.untrustedReceiving == 6)
            let all = tricklers
            try await offPool {
                let keyed = try TestClient(port: port, timeout: 3)
                let r = try keyed.request("GET", "/hello", headers: [("X-Key", "good")])
                #expect(r.status == 200)
                #expect(r.text == "hi")
                for t in all[0..<5] {
                    t.setTimeout(2)
                    #expect(t.waitForClose())
                }
                for t in all[5...] { #expect(Self.stillOpen(t)) }
            }
            #expect(metrics.value("inferd_connections_closed_early_total", labels: ["reason": "reserve"]) == 5)
        }
    }

    /// The gate answers as soon as the head is in: the 401 arrives before a byte of the declared
    /// 1 MiB body is sent, the handler never runs, and the connection closes after the answer.
    @Test func aRefusedHeadIsAnsweredBeforeItsBodyAndTheConnectionCloses() async throws {
        let logs = LogCapture()
        try await withServer(
            routes: { router in
                standardRoutes(producers)(router)
                Self.keyGate(router)
            }, logs: logs
        ) { _, port, _ in
            try await offPool {
                let c = try TestClient(port: port)
                c.send(
                    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(1 << 20)\r\n\r\n"
                )
                let r = try c.readResponse()
                #expect(r.status == 401)
                #expect(r.errorCode == "missing_api_key")
                #expect(r.header("Connection")?.lowercased() == "close")
                #expect(c.waitForClose())
                let keyed = try TestClient(port: port)
                let ok = try keyed.request(
                    "POST", "/echo", headers: [("X-Key", "good"), ("Content-Type", "application/json")],
                    body: Array(#"{"message":"m","n":1}"#.utf8))
                #expect(ok.status == 200)
            }
            #expect(await eventually { logs.matching("request completed").count == 2 })
            #expect(logs.matching("status=401").count == 1)
        }
    }

    /// Sends `raw`, reads everything until the server closes; nil if it did not close in time.
    static func exchangeRaw(_ port: Int, _ raw: [UInt8]) throws -> [UInt8]? {
        let c = try TestClient(port: port, timeout: 3)
        c.send(raw)
        while c.fill() {}
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? nil : c.buffer
    }

    /// Each malformed head: one 400 (exactly one status line), naming the header, with
    /// `Connection: close`, and the server closes the connection; the route never runs.
    @Test func malformedHeadsAreAnswered400OnceAndClosed() async throws {
        let logs = LogCapture()
        let cases: [(String, [UInt8], String)] = [
            (
                "two Authorization",
                Array(
                    "GET /hello HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n".utf8),
                "Authorization"
            ),
            (
                "Content-Length and chunked",
                Array(
                    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                        .utf8), "Transfer-Encoding"
            ),
            ("no Host", Array("GET /hello HTTP/1.1\r\n\r\n".utf8), "Host"),
            (
                "Content-Length not a number",
                Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n".utf8), "Content-Length"
            ),
            (
                "NUL in a value",
                Array("GET /hello HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY".utf8) + [0]
                    + Array("junk\r\n\r\n".utf8), "Authorization"
            ),
            ("control character", Array("GET /hello HTTP/1.1\r\nHost: x\r\nX-A: a\u{01}b\r\n\r\n".utf8), "X-A"),
        ]
        try await withServer(routes: standardRoutes(producers), logs: logs) { _, port, _ in
            try await offPool {
                for (name, raw, param) in cases {
                    let bytes = try Self.exchangeRaw(port, raw)
                    #expect(bytes != nil, "\(name): the server did not close the connection")
                    let text = String(decoding: bytes ?? [], as: UTF8.self)
                    #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(name): \(text)")
                    #expect(
                        text.components(separatedBy: "HTTP/1.1 400").count == 2,
                        "\(name): more than one answer: \(text)")
                    #expect(text.contains("\r\nConnection: close\r\n"), "\(name)")
                    #expect(text.contains("\"param\":\"\(param)\""), "\(name): \(text)")
                    #expect(text.hasSuffix("}"), "\(name): \(text)")
                }
                // HTTP/1.0 may leave Host out; a tab is allowed in a value.
                let old = try TestClient(port: port)
                old.send("GET /hello HTTP/1.0\r\nX-A: a\tb\r\n\r\n")
                #expect(try old.readResponse().status == 200)
            }
            #expect(await eventually { logs.matching("path=/hello status=200").count == 1 })
            #expect(logs.matching("path=/echo status=200").isEmpty)
        }
    }
}
