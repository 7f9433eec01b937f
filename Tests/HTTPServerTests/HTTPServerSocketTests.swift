import Foundation
import Glibc
import Telemetry
import TestSupport
import Testing

@testable import HTTPServer

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
                #expect(teapot.errorCode == "invalid_request")
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
                        return .error(HTTPError(status: 401, message: "no", type: "t", code: .invalidAPIKey))
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
                #expect(try c.request("GET", "/hello", headers: [("X-Deny", "1")]).errorCode == "invalid_api_key")
                #expect(try c.request("GET", "/nope", headers: [("X-Deny", "1")]).errorCode == "invalid_api_key")
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
}
