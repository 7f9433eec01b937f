import Foundation
import Glibc
import TestSupport
import Testing

/// `inferd serve --backend openai` in front of a second `inferd serve` (the release binary with
/// the default model): answers, sessions and cancellation through the proxy hop, each checked
/// against the upstream itself.
@Suite(.serialized) struct RemoteProxyEndToEndTests {
    typealias ServerProcess = SessionsRestartTests.ServerProcess

    static func tempDir() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("inferd-remote-\(UUID().uuidString)").path
    }

    /// An upstream inferd and a proxy inferd over it.
    static func withPair(_ body: (ServerProcess, ServerProcess, String) async throws -> Void) async throws {
        let upstream = try ServerProcess(dataDir: tempDir())
        defer { upstream.stop() }
        let proxy = try ServerProcess(
            dataDir: tempDir(), extra: ["--backend", "openai", "--upstream", "http://127.0.0.1:\(upstream.port)/v1"])
        defer { proxy.stop() }
        let models = try await offPool { try proxy.client().request("GET", "/v1/models") }
        let model = try #require((models.json?["data"] as? [[String: Any]])?.first?["id"] as? String)
        let direct = try await offPool { try upstream.client().request("GET", "/v1/models") }
        #expect((direct.json?["data"] as? [[String: Any]])?.first?["id"] as? String == model)
        try await body(upstream, proxy, model)
    }

    static func post(_ s: ServerProcess, _ path: String, _ body: [String: Any]) async throws -> RawResponse {
        let json = jsonString(body)
        return try await offPool { try s.client().postJSON(path, json) }
    }

    static func content(_ r: RawResponse) -> String? {
        let choice = (r.json?["choices"] as? [[String: Any]])?.first
        return (choice?["message"] as? [String: Any])?["content"] as? String ?? choice?["text"] as? String
    }

    @Test func greedyAnswersThroughTheProxyEqualDirectAnswers() async throws {
        try await Self.withPair { upstream, proxy, model in
            for question in ["What is the capital of France?", "Name three colours."] {
                let body: [String: Any] = [
                    "model": model, "temperature": 0, "max_tokens": 24,
                    "messages": [
                        ["role": "system", "content": "You are terse."], ["role": "user", "content": question],
                    ],
                ]
                let viaProxy = try await Self.post(proxy, "/v1/chat/completions", body)
                let direct = try await Self.post(upstream, "/v1/chat/completions", body)
                #expect(viaProxy.status == 200, "\(viaProxy.text)")
                let answer = try #require(Self.content(direct))
                #expect(!answer.isEmpty)
                #expect(Self.content(viaProxy) == answer)
                // Usage is the upstream's own count, not the proxy's estimate.
                let proxyUsage = viaProxy.json?["usage"] as? [String: Any]
                let directUsage = direct.json?["usage"] as? [String: Any]
                #expect(proxyUsage?["prompt_tokens"] as? Int == directUsage?["prompt_tokens"] as? Int)
            }
            let text: [String: Any] = [
                "model": model, "prompt": "The three primary colours are", "temperature": 0, "max_tokens": 16,
            ]
            let viaProxy = try await Self.post(proxy, "/v1/completions", text)
            let direct = try await Self.post(upstream, "/v1/completions", text)
            #expect(viaProxy.status == 200, "\(viaProxy.text)")
            #expect(Self.content(viaProxy) != nil && Self.content(viaProxy) == Self.content(direct))
        }
    }

    @Test func aThreeTurnSessionThroughTheProxyMatchesOneOnTheUpstream() async throws {
        try await Self.withPair { upstream, proxy, model in
            func session(_ s: ServerProcess) async throws -> (String, [String]) {
                let created = try await Self.post(
                    s, "/v1/sessions", ["instructions": "You are terse.", "options": ["temperature": 0]])
                #expect(created.status == 201, "\(created.text)")
                let id = try #require(created.json?["id"] as? String)
                var answers: [String] = []
                for turn in ["My name is Ada.", "What is my name?", "Spell it backwards."] {
                    let r = try await Self.post(
                        s, "/v1/chat/completions",
                        [
                            "model": model, "session_id": id, "max_tokens": 20,
                            "messages": [["role": "user", "content": turn]],
                        ])
                    #expect(r.status == 200, "\(r.text)")
                    answers.append(Self.content(r) ?? "")
                }
                return (id, answers)
            }
            let (proxyID, viaProxy) = try await session(proxy)
            let (_, direct) = try await session(upstream)
            #expect(viaProxy == direct, "the proxy's session sent another transcript than the upstream's own")
            #expect(!direct.contains(""))
            let r = try await offPool { try proxy.client().request("GET", "/v1/sessions/\(proxyID)") }
            let entries = try #require(r.json?["transcript"] as? [[String: Any]])
            #expect(
                entries.map { $0["type"] as? String ?? "" } == [
                    "instructions", "prompt", "response", "prompt", "response", "prompt", "response",
                ])
        }
    }

    @Test func aClientDisconnectCancelsTheUpstreamGenerationWithin50ms() async throws {
        try await Self.withPair { upstream, proxy, model in
            let json = jsonString([
                "model": model, "stream": true, "temperature": 0, "max_tokens": 1000, "ignore_eos": true,
                "messages": [["role": "user", "content": "Tell a long story."]],
            ])
            let closedAt = try await offPool { () -> Date in
                let c = try proxy.client()
                let (status, _) = try c.startStream("/v1/chat/completions", json)
                #expect(status == 200)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.count >= 3 }
                let at = Date()
                c.close()
                return at
            }
            let line = await eventually(timeout: .seconds(5)) {
                !upstream.log.matching("request cancelled").isEmpty
            }
            #expect(line, "the upstream never logged a cancellation")
            let logged = try #require(upstream.log.matching("request cancelled").first)
            #expect(logged.contains("reason=client_disconnected"))
            let stamp = try #require(logged.split(separator: " ").first.map(String.init))
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let cancelledAt = try #require(formatter.date(from: stamp + "Z"))
            // The log's stamp has millisecond resolution: 1 ms of slack for its rounding down.
            #expect(
                cancelledAt.timeIntervalSince(closedAt) < 0.051,
                "upstream cancelled \(Int(cancelledAt.timeIntervalSince(closedAt) * 1000)) ms after the close")
            let metrics = try await offPool { try upstream.client().request("GET", "/metrics") }
            #expect(metrics.text.contains("inferd_cancellations_total{reason=\"client_disconnected\"} 1"))
        }
    }

    @Test func sigtermOnTheProxyCancelsTheUpstreamGenerationAndExitsZero() async throws {
        let upstream = try ServerProcess(dataDir: Self.tempDir())
        defer { upstream.stop() }
        let proxy = try ServerProcess(
            dataDir: Self.tempDir(),
            extra: [
                "--backend", "openai", "--upstream", "http://127.0.0.1:\(upstream.port)/v1", "--drain-seconds", "0.2",
            ])
        defer { proxy.stop() }
        let models = try await offPool { try proxy.client().request("GET", "/v1/models") }
        let model = try #require((models.json?["data"] as? [[String: Any]])?.first?["id"] as? String)
        let json = jsonString([
            "model": model, "stream": true, "temperature": 0, "max_tokens": 2000, "ignore_eos": true,
            "messages": [["role": "user", "content": "Tell a long story."]],
        ])
        let client = try proxy.client()
        defer { client.close() }
        let started = try await offPool { () -> Bool in
            let (status, _) = try client.startStream("/v1/chat/completions", json)
            var reader = SSEReader()
            return try status == 200 && client.readEvents(into: &reader) { $0.events.count >= 2 }
        }
        #expect(started)
        kill(proxy.process.processIdentifier, SIGTERM)
        let exited = await eventually(timeout: .seconds(10)) { !proxy.process.isRunning }
        #expect(exited)
        #expect(proxy.process.terminationStatus == 0)
        #expect(await eventually(timeout: .seconds(5)) { !upstream.log.matching("request cancelled").isEmpty })
        #expect(!proxy.log.matching("reason=shutdown").isEmpty, "\(proxy.log.lines.withLock { $0 })")
    }

    @Test func anUnreachableUpstreamIs503WithRetryAfter() async throws {
        // Port 1: nothing listens. Model and context are configured, so the proxy starts without asking.
        let proxy = try ServerProcess(
            dataDir: Self.tempDir(),
            extra: [
                "--backend", "openai", "--upstream", "http://127.0.0.1:1/v1", "--upstream-model", "m",
                "--context-length", "2048",
            ])
        defer { proxy.stop() }
        let r = try await Self.post(
            proxy, "/v1/chat/completions",
            ["model": "m", "max_tokens": 8, "messages": [["role": "user", "content": "Hi"]]])
        #expect(r.status == 503, "\(r.text)")
        #expect(r.header("retry-after") != nil)
        #expect((r.json?["error"] as? [String: Any])?["code"] as? String == "upstream_unavailable")
        // A prompt past the configured context is a 400 before anything is sent.
        let long = String(repeating: "word ", count: 2000)
        let overflow = try await Self.post(
            proxy, "/v1/chat/completions",
            ["model": "m", "max_tokens": 8, "messages": [["role": "user", "content": long]]])
        #expect(overflow.status == 400, "\(overflow.text)")
        #expect((overflow.json?["error"] as? [String: Any])?["code"] as? String == "context_length_exceeded")
    }

    /// `scripts/fake-upstream.py`, whose base URL's first segment picks a fault.
    final class FakeUpstream: @unchecked Sendable {
        let process = Process()
        let port: Int

        init() throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", TestPaths.packageRoot.appendingPathComponent("scripts/fake-upstream.py").path, "0",
            ]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
            guard line.hasPrefix("PORT "),
                let port = Int(line.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines))
            else {
                kill(process.processIdentifier, SIGKILL)
                throw ClientError(description: "fake upstream did not start: \(line)")
            }
            self.port = port
        }

        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    @Test func upstreamFaultsReachTheClientAsTheirStatusOrAnErrorEvent() async throws {
        let fake = try FakeUpstream()
        defer { fake.stop() }
        func proxy(_ mode: String) throws -> ServerProcess {
            try ServerProcess(
                dataDir: Self.tempDir(),
                extra: [
                    "--backend", "openai", "--upstream", "http://127.0.0.1:\(fake.port)/\(mode)/v1", "--upstream-model",
                    "fake", "--context-length", "2048",
                ])
        }
        let chat: [String: Any] = ["model": "fake", "max_tokens": 8, "messages": [["role": "user", "content": "Hi"]]]

        let busy = try proxy("busy")
        defer { busy.stop() }
        let refused = try await Self.post(busy, "/v1/chat/completions", chat)
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.header("retry-after") == "7")
        #expect((refused.json?["error"] as? [String: Any])?["code"] as? String == "upstream_unavailable")

        let reject = try proxy("reject")
        defer { reject.stop() }
        let rejected = try await Self.post(reject, "/v1/chat/completions", chat)
        #expect(rejected.status == 400, "\(rejected.text)")
        let message = (rejected.json?["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.contains("the upstream does not like this request"))

        // Death after three deltas: the stream carried them, then ends with an error event.
        let die = try proxy("die")
        defer { die.stop() }
        var body = chat
        body["stream"] = true
        let json = jsonString(body)
        let reader = try await offPool { () -> SSEReader in
            let c = try die.client()
            let (status, _) = try c.startStream("/v1/chat/completions", json)
            #expect(status == 200)
            var reader = SSEReader()
            try c.readEvents(into: &reader) { _ in false }
            return reader
        }
        let data = reader.events.map(\.data)
        #expect(data.contains { $0.contains("\"content\":\"a\"") }, "\(data)")
        #expect(data.contains { $0.contains("upstream_failed") }, "no upstream_failed error event: \(data)")
        #expect(try fakeRequests(fake) == 3, "a failed stream was retried")
        let metrics = try await offPool { try die.client().request("GET", "/metrics") }
        #expect(metrics.text.contains("inferd_generations_total{finish_reason=\"error\"} 1"))
        let upstreamSeries =
            "inferd_upstream_requests_total{outcome=\"failed\",upstream=\"http://127.0.0.1:\(fake.port)/die/v1\"} 1"
        #expect(metrics.text.contains(upstreamSeries), "\(metrics.text)")
    }

    func fakeRequests(_ fake: FakeUpstream) throws -> Int {
        let c = try TestClient(port: fake.port, timeout: 5)
        defer { c.close() }
        return try c.request("GET", "/stats").json?["requests"] as? Int ?? -1
    }
}
