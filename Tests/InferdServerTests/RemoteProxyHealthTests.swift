import Foundation
import Glibc
import TestSupport
import Testing

/// `inferd serve --backend openai` with health checks, weights, structured output passed upstream,
/// and the cancel endpoint and `replace` reaching an inferd upstream.
@Suite(.serialized) struct RemoteProxyHealthTests {
    typealias ServerProcess = SessionsRestartTests.ServerProcess
    typealias Pair = RemoteProxyEndToEndTests

    static func health(_ s: ServerProcess) async throws -> RawResponse {
        try await offPool { try s.client().request("GET", "/health") }
    }

    @Test func healthListsTheUpstreamsRedactedAndIsDegradedWhileOneIsDown() async throws {
        let upstream = try ServerProcess(dataDir: Pair.tempDir())
        defer { upstream.stop() }
        let good = "http://127.0.0.1:\(upstream.port)/v1"
        // Port 1: nothing listens; its URL carries credentials that must never show.
        let proxy = try ServerProcess(
            dataDir: Pair.tempDir(),
            extra: [
                "--backend", "openai", "--upstream", "\(good)#weight=3,http://user:s3cret@127.0.0.1:1/v1",
                "--upstream-health-interval-seconds", "0.2", "--upstream-health-timeout-seconds", "0.5",
            ])
        defer { proxy.stop() }
        let degraded = await eventually(timeout: .seconds(10)) {
            ((try? proxy.client().request("GET", "/health"))?.json?["status"] as? String) == "degraded"
        }
        #expect(degraded, "the proxy never reported degraded")
        let h = try await Self.health(proxy)
        #expect(h.status == 200, "one upstream still serves: \(h.text)")
        let upstreams = try #require(h.json?["upstreams"] as? [[String: Any]])
        #expect(upstreams.count == 2)
        #expect(upstreams[0]["url"] as? String == good)
        #expect(upstreams[0]["status"] as? String == "up")
        #expect(upstreams[0]["weight"] as? Int == 3)
        #expect(upstreams[1]["url"] as? String == "http://…@127.0.0.1:1/v1")
        #expect(upstreams[1]["status"] as? String == "down")
        #expect(upstreams[1]["weight"] as? Int == 1)
        #expect(!h.text.contains("s3cret"))

        // Requests go to the upstream that is up, and none tries the down one first.
        let models = try await offPool { try proxy.client().request("GET", "/v1/models") }
        let model = try #require((models.json?["data"] as? [[String: Any]])?.first?["id"] as? String)
        for _ in 0..<3 {
            let r = try await Pair.post(
                proxy, "/v1/chat/completions",
                ["model": model, "max_tokens": 4, "temperature": 0, "messages": [["role": "user", "content": "Hi"]]])
            #expect(r.status == 200, "\(r.text)")
        }
        let metrics = try await offPool { try proxy.client().request("GET", "/metrics").text }
        #expect(metrics.contains("inferd_upstream_up{upstream=\"http://…@127.0.0.1:1/v1\"} 0"), "\(metrics)")
        #expect(metrics.contains("inferd_upstream_up{upstream=\"\(good)\"} 1"))
        #expect(metrics.contains("inferd_upstream_active_generations{upstream=\"\(good)\"} 0"))
        #expect(!metrics.contains("outcome=\"unreachable\""), "a request tried the down upstream")
        #expect(!metrics.contains("s3cret"))
        #expect(proxy.log.matching("s3cret").isEmpty, "the upstream's password reached the log")
    }

    @Test func everyUpstreamDownIs503UnavailableAtOnce() async throws {
        let proxy = try ServerProcess(
            dataDir: Pair.tempDir(),
            extra: [
                "--backend", "openai", "--upstream", "http://127.0.0.1:1/v1", "--upstream-model", "m",
                "--context-length", "2048", "--upstream-health-interval-seconds", "0.2",
            ])
        defer { proxy.stop() }
        let down = await eventually(timeout: .seconds(10)) {
            ((try? proxy.client().request("GET", "/health"))?.json?["status"] as? String) == "unavailable"
        }
        #expect(down)
        #expect(try await Self.health(proxy).status == 503)
        let start = ContinuousClock.now
        let r = try await Pair.post(
            proxy, "/v1/chat/completions",
            ["model": "m", "max_tokens": 8, "messages": [["role": "user", "content": "Hi"]]])
        #expect(r.status == 503)
        #expect(r.header("retry-after") != nil)
        #expect((r.json?["error"] as? [String: Any])?["code"] as? String == "upstream_unavailable")
        #expect(proxy.log.matching("upstream unreachable").isEmpty, "a request was sent to a down upstream")
        #expect(ContinuousClock.now - start < .seconds(1))
    }

    @Test func aSchemaAnswerThroughTheProxyValidates() async throws {
        try await Pair.withPair { upstream, proxy, model in
            // Written out, so both servers see the properties in this order (it steers the answer).
            let body = """
                {"model":"\(model)","max_tokens":60,"temperature":0,\
                "messages":[{"role":"user","content":"Describe a person as JSON."}],\
                "response_format":{"type":"json_schema","json_schema":{"name":"person","schema":\
                {"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer"}},\
                "required":["name","age"],"additionalProperties":false}}}}
                """
            let r = try await offPool { try proxy.client().postJSON("/v1/chat/completions", body) }
            #expect(r.status == 200, "\(r.text)")
            let text = try #require(Pair.content(r))
            let value = try #require(
                try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
            #expect(value["name"] is String)
            #expect(value["age"] is Int)
            #expect(Set(value.keys) == ["name", "age"])
            // The upstream itself constrained it: its own answer to the same request is the same.
            let direct = try await offPool { try upstream.client().postJSON("/v1/chat/completions", body) }
            #expect(Pair.content(direct) == text)

            // The native route's value is validated by the proxy's own check of the text.
            let native = """
                {"prompt":"Describe a person as JSON.",\
                "options":{"temperature":0,"max_tokens":60,"format":{"type":"json_schema","schema":\
                {"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer"}},\
                "required":["name","age"],"additionalProperties":false}}}}
                """
            let g = try await offPool { try proxy.client().postJSON("/v1/generations", native) }
            let json = try #require(g.json, "\(g.text)")
            #expect(json["finish_reason"] as? String == "stop", "\(json)")
            #expect(json["partial"] as? Bool == false, "\(json)")
            #expect((json["value"] as? [String: Any])?["age"] is Int)
        }
    }

    /// Streams a long session turn through the proxy until its first snapshot; returns its request id.
    static func startLongTurn(_ proxy: ServerProcess, session: String, client: TestClient) throws -> String {
        let body = jsonString([
            "prompt": "Tell a long story.", "stream": true,
            "options": ["max_tokens": 1000, "temperature": 0, "ignore_eos": true],
        ])
        let (status, _) = try client.startStream("/v1/sessions/\(session)/responses", body)
        #expect(status == 200)
        var reader = SSEReader()
        try client.readEvents(into: &reader) { r in r.events.contains { $0.name == "snapshot" } }
        return try #require(SessionsEndToEndTests.requestID(reader))
    }

    static func cancelledAt(_ upstream: ServerProcess) throws -> Date {
        let logged = try #require(upstream.log.matching("request cancelled").first)
        let stamp = try #require(logged.split(separator: " ").first.map(String.init))
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try #require(formatter.date(from: stamp + "Z"))
    }

    @Test func theCancelEndpointAndReplaceReachTheUpstreamWithin50ms() async throws {
        try await Pair.withPair { upstream, proxy, _ in
            let created = try await offPool { try proxy.client().postJSON("/v1/sessions", "{\"on_busy\":\"replace\"}") }
            let session = try #require(created.json?["id"] as? String, "\(created.text)")
            let streaming = try proxy.client()
            defer { streaming.close() }
            let rid = try await offPool { try Self.startLongTurn(proxy, session: session, client: streaming) }
            let asked = Date()
            let cancel = try await offPool { try proxy.client().postJSON("/v1/requests/\(rid)/cancel", "{}") }
            #expect(cancel.status == 200, "\(cancel.text)")
            #expect(await eventually(timeout: .seconds(5)) { !upstream.log.matching("request cancelled").isEmpty })
            let first = try Self.cancelledAt(upstream)
            // The cancel's answer waits for the stop; 1 ms of slack for the log stamp's rounding.
            #expect(
                first.timeIntervalSince(asked) < 0.051,
                "upstream cancelled \(Int(first.timeIntervalSince(asked) * 1000)) ms after the cancel request")

            // replace: a second turn while one runs stops the running one, upstream too.
            let older = try proxy.client()
            defer { older.close() }
            _ = try await offPool { try Self.startLongTurn(proxy, session: session, client: older) }
            let replacing = Date()
            let newer = try await offPool { () -> Int in
                try proxy.client().postJSON(
                    "/v1/sessions/\(session)/responses",
                    jsonString(["prompt": "Hi", "options": ["max_tokens": 2, "temperature": 0]])
                ).status
            }
            #expect(newer == 200)
            #expect(await eventually(timeout: .seconds(5)) { upstream.log.matching("request cancelled").count >= 2 })
            let lines = upstream.log.matching("request cancelled")
            let stamp = try #require(lines[1].split(separator: " ").first.map(String.init))
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let second = try #require(formatter.date(from: stamp + "Z"))
            #expect(
                second.timeIntervalSince(replacing) < 0.051,
                "upstream cancelled \(Int(second.timeIntervalSince(replacing) * 1000)) ms after the replacing turn")
        }
    }
}
