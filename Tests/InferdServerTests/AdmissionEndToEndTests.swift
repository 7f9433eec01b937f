import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// Capacity, the engine's queue and timeouts over HTTP with the real model. The engine here has
/// one place and one waiting slot, so two requests fill it; it is these tests' own (the other
/// suites share another), and they run one at a time.
@Suite(.serialized) struct AdmissionEndToEndTests {
    static let metrics = Metrics()
    static let engine = Result {
        guard FileManager.default.fileExists(atPath: SharedModel.path) else {
            throw ClientError(description: "model missing at \(SharedModel.path): run `make model`")
        }
        return try InferenceEngine(
            path: SharedModel.path, threads: 2, admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 1),
            metrics: metrics)
    }

    /// Runs until its client leaves. Each call is a different request: identical greedy ones
    /// would share one generation (single-flight) instead of queueing.
    static var endless: String {
        jsonString([
            "prompt": "Count from one to one thousand. (\(UUID().uuidString))", "stream": true,
            "options": ["temperature": 0, "max_tokens": 1000, "ignore_eos": true],
        ])
    }

    func server() throws -> RunningServer {
        try RunningServer.start(state: .ready(Self.engine.get()), metrics: Self.metrics) { c in
            c.maxActiveSequences = 1
            c.maxQueue = 1
        }
    }

    /// Stops the server and waits until the engine has nothing running or waiting, so the next
    /// test starts on an idle engine.
    func finish(_ s: RunningServer) async {
        await s.server.shutdown()
        #expect(await eventually(timeout: .seconds(30)) { Self.metrics.value("inferd_active_sequences") == 0 })
        #expect(Self.metrics.value("inferd_queue_length") == 0)
    }

    /// Starts a stream that holds the engine's place, and returns once it produces text.
    func hold(_ s: RunningServer) async throws -> TestClient {
        let holder = try s.client()
        let status = try await offPool { () -> Int in
            let (status, _) = try holder.startStream("/v1/generations", Self.endless)
            var reader = SSEReader()
            try holder.readEvents(into: &reader) { $0.events.contains { $0.name == "snapshot" } }
            return status
        }
        #expect(status == 200)
        return holder
    }

    @Test func aFullQueueIs503WithRetryAfterAndAWaitingStreamHearsItsPlace() async throws {
        let s = try server()
        let session = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
        let sessionID = try #require(session.json?["id"] as? String)
        let busyBefore = Self.metrics.value("inferd_server_busy_total") ?? 0
        let holder = try await hold(s)
        let waiter = try s.client()
        let (status, queuedData) = try await offPool { () -> (Int, String) in
            let (status, _) = try waiter.startStream("/v1/generations", Self.endless)
            var reader = SSEReader()
            try waiter.readEvents(into: &reader) { $0.events.contains { $0.name == "queued" } }
            return (status, reader.events.first { $0.name == "queued" }?.data ?? "")
        }
        #expect(status == 200 && jsonObject(queuedData)["position"] as? Int == 1)

        let native = try await offPool {
            try s.client().postJSON("/v1/generations", jsonString(["prompt": "Hi", "options": ["max_tokens": 4]]))
        }
        #expect(native.status == 503 && native.errorCode == "server_busy")
        #expect(Int(native.header("Retry-After") ?? "").map { $0 >= 1 } == true)
        // A stream is refused before it starts, with a plain 503 too.
        let refusedStream = try await offPool { try s.client().startStream("/v1/generations", Self.endless) }
        #expect(refusedStream.status == 503)
        let chat = try await offPool {
            try s.client().postJSON(
                "/v1/chat/completions",
                jsonString([
                    "model": "SmolLM2-135M-Instruct.Q4_1", "messages": [["role": "user", "content": "Hi"]],
                    "max_tokens": 4,
                ]))
        }
        #expect(chat.status == 503 && chat.header("Retry-After") != nil)
        let error = try #require(chat.json?["error"] as? [String: Any])
        #expect(error["code"] as? String == "server_busy" && error["type"] as? String == "server_error")
        #expect(error.keys.contains("param"))
        // Anthropic's Messages API: 529 overloaded_error, as Anthropic answers when it has no capacity.
        let messages = try await offPool {
            try s.client().postJSON(
                "/v1/messages",
                jsonString([
                    "model": "SmolLM2-135M-Instruct.Q4_1", "messages": [["role": "user", "content": "Hi"]],
                    "max_tokens": 4,
                ]))
        }
        #expect(messages.status == 529 && messages.header("retry-after") != nil, "\(messages.text)")
        #expect(messages.json?["type"] as? String == "error")
        #expect((messages.json?["error"] as? [String: Any])?["type"] as? String == "overloaded_error")
        let turn = try await offPool {
            try s.client().postJSON("/v1/sessions/\(sessionID)/responses", jsonString(["prompt": "Hi"]))
        }
        #expect(turn.status == 503 && turn.errorCode == "server_busy")
        // The Responses API, foreground or background: refused before anything is stored.
        for background in [false, true] {
            let response = try await offPool {
                try s.client().postJSON(
                    "/v1/responses",
                    jsonString([
                        "model": "SmolLM2-135M-Instruct.Q4_1", "input": "Hi", "max_output_tokens": 4,
                        "background": background,
                    ]))
            }
            #expect(
                response.status == 503 && response.errorCode == "server_busy" && response.header("Retry-After") != nil)
        }
        #expect(s.app.archive.store.count == 0 && s.app.archive.live.count == 0)
        #expect(Self.metrics.value("inferd_server_busy_total") == busyBefore + 7)

        let metricsText = try await offPool { try s.client().request("GET", "/metrics").text }
        for name in [
            "inferd_active_sequences 1", "inferd_queue_length 1", "inferd_server_busy_total",
            "inferd_generation_timeouts_total", "inferd_preemptions_total",
        ] {
            #expect(metricsText.contains(name), "/metrics lacks \(name)")
        }

        // The holder leaves: the waiter gets the place.
        holder.close()
        let started = try await offPool { () -> Bool in
            var reader = SSEReader()
            return try waiter.readEvents(into: &reader) { $0.events.contains { $0.name == "started" } }
        }
        #expect(started)
        waiter.close()
        await finish(s)
    }

    /// A Messages stream that has to wait says so as Anthropic's clients expect: `message_start`
    /// first, then `ping` while it waits, then its blocks once it has the place.
    @Test func aWaitingMessagesStreamPingsAfterItsStart() async throws {
        let s = try server()
        let holder = try await hold(s)
        let waiter = try s.client()
        let (status, waiting) = try await offPool { () -> (Int, [SSEReader.Event]) in
            let (status, _) = try waiter.startStream(
                "/v1/messages",
                jsonString([
                    "model": "SmolLM2-135M-Instruct.Q4_1", "stream": true, "max_tokens": 8,
                    "messages": [["role": "user", "content": "Say hi. (\(UUID().uuidString))"]],
                ]))
            var reader = SSEReader()
            try waiter.readEvents(into: &reader) { $0.events.contains { $0.name == "ping" } }
            return (status, reader.events)
        }
        #expect(status == 200)
        #expect(waiting.map(\.name) == ["message_start", "ping"], "\(waiting.map(\.name))")
        holder.close()
        let rest = try await offPool { () -> [String] in
            var reader = SSEReader()
            try waiter.readEvents(into: &reader) { $0.events.contains { $0.name == "message_stop" } }
            return reader.events.map(\.name)
        }
        #expect(rest.last == "message_stop" && rest.contains("content_block_delta") && rest.contains("message_delta"))
        waiter.close()
        await finish(s)
    }

    /// Its own engine and server on one manual clock: the test decides when each deadline passes,
    /// so a loaded machine can neither cut an answer early nor let a waiter start before its
    /// deadline. Nothing here waits on the wall clock except as a bound for a stuck test.
    static let clock = ManualTimeSource()
    static let timedMetrics = Metrics()
    static let timedEngine = Result {
        try InferenceEngine(
            path: SharedModel.path, threads: 2, admission: AdmissionPolicy(maxActiveSequences: 1, maxQueue: 1),
            metrics: timedMetrics, clock: clock)
    }

    @Test func aTimeoutCutsARunningAnswerAndRefusesAWaitingOne() async throws {
        let clock = Self.clock
        let metrics = Self.timedMetrics
        let s = try RunningServer.start(state: .ready(Self.timedEngine.get()), metrics: metrics, clock: clock) { c in
            c.maxActiveSequences = 1
            c.maxQueue = 1
        }
        let timeoutsBefore = metrics.value("inferd_generation_timeouts_total", labels: ["stage": "queue"]) ?? 0

        // The engine is idle: a stream starts at once; time passes its deadline once it has text,
        // and it is cut at the next step, keeping what it has.
        let nativeEvents = try await offPool { () -> [SSEReader.Event] in
            let c = try s.client()
            defer { c.close() }
            _ = try c.startStream(
                "/v1/generations",
                jsonString([
                    "prompt": "Count from one to one thousand. (native)", "stream": true, "timeout_seconds": 0.5,
                    "options": ["temperature": 0, "max_tokens": 1000, "ignore_eos": true],
                ]))
            var reader = SSEReader()
            _ = try c.readEvents(into: &reader) { $0.events.contains { $0.name == "snapshot" } }
            clock.advance(by: .seconds(1))
            _ = try c.readEvents(into: &reader) { $0.events.contains { $0.name == "completed" } }
            return reader.events
        }
        let completed = jsonObject(nativeEvents.last { $0.name == "completed" }?.data ?? "")
        #expect(completed["finish_reason"] as? String == "timeout", "\(completed)")
        let usage = completed["usage"] as? [String: Any]
        #expect((usage?["completion_tokens"] as? Int ?? 1000) < 1000)

        let chunks = try await offPool { () -> [SSEReader.Event] in
            let c = try s.client()
            defer { c.close() }
            _ = try c.startStream(
                "/v1/chat/completions",
                jsonString([
                    "model": "SmolLM2-135M-Instruct.Q4_1", "stream": true,
                    "messages": [["role": "user", "content": "Count from one to one thousand. (chat)"]],
                    "max_tokens": 1000, "ignore_eos": true, "timeout_seconds": 0.5, "temperature": 0,
                ]))
            var reader = SSEReader()
            _ = try c.readEvents(into: &reader) { !$0.events.isEmpty }
            clock.advance(by: .seconds(1))
            _ = try c.readEvents(into: &reader) { $0.events.contains { $0.data == "[DONE]" } }
            return reader.events
        }
        let reasons = chunks.compactMap { event -> String? in
            let choice = (jsonObject(event.data)["choices"] as? [[String: Any]])?.first
            return choice?["finish_reason"] as? String
        }
        #expect(reasons == ["timeout"], "\(chunks.map(\.data))")
        #expect(await eventually(timeout: .seconds(30)) { metrics.value("inferd_active_sequences") == 0 })

        // One holds the place; a request waiting behind it is refused once its deadline passes.
        let holder = try await hold(s)
        let queuedBefore = metrics.value("inferd_queue_length") ?? 0
        async let waiting = offPool {
            try s.client().postJSON("/v1/generations", jsonString(["prompt": "Hi", "timeout_seconds": 0.3]))
        }
        #expect(await eventually(timeout: .seconds(30)) { metrics.value("inferd_queue_length") == queuedBefore + 1 })
        clock.advance(by: .seconds(0.5))
        let refused = try await waiting
        #expect(refused.status == 503 && refused.errorCode == "timeout")
        // A stream has sent its headers by then: it ends with an error event instead.
        let events = try await offPool { () -> [SSEReader.Event] in
            let c = try s.client()
            defer { c.close() }
            _ = try c.startStream(
                "/v1/generations", jsonString(["prompt": "Hi", "stream": true, "timeout_seconds": 0.3]))
            var reader = SSEReader()
            _ = try c.readEvents(into: &reader) { $0.events.contains { $0.name == "queued" } }
            clock.advance(by: .seconds(0.5))
            _ = try c.readEvents(into: &reader) { $0.events.contains { $0.name == "error" || $0.name == "completed" } }
            return reader.events
        }
        #expect(events.map(\.name) == ["queued", "error"])
        let detail = jsonObject(events.last?.data ?? "")["error"] as? [String: Any]
        #expect(detail?["code"] as? String == "timeout")
        #expect(metrics.value("inferd_generation_timeouts_total", labels: ["stage": "queue"]) == timeoutsBefore + 2)
        holder.close()
        await s.server.shutdown()
        #expect(await eventually(timeout: .seconds(30)) { metrics.value("inferd_active_sequences") == 0 })
    }

    @Test func badTimeoutsAndPrioritiesAre400NamingTheField() async throws {
        let s = try server()
        for bad in ["0", "-1", "1e9", "\"soon\"", "true"] {
            let r = try await offPool {
                try s.client().postJSON("/v1/generations", "{\"prompt\": \"Hi\", \"timeout_seconds\": \(bad)}")
            }
            #expect(r.status == 400 && r.text.contains("timeout_seconds"), "timeout_seconds \(bad): \(r.text)")
        }
        let priority = try await offPool {
            try s.client().postJSON("/v1/generations", jsonString(["prompt": "Hi", "priority": "urgent"]))
        }
        #expect(priority.status == 400 && priority.text.contains("priority"))
        let chat = try await offPool {
            try s.client().postJSON(
                "/v1/chat/completions",
                jsonString([
                    "model": "SmolLM2-135M-Instruct.Q4_1", "messages": [["role": "user", "content": "Hi"]],
                    "timeout_seconds": 0,
                ]))
        }
        #expect(chat.status == 400 && (chat.json?["error"] as? [String: Any])?["param"] as? String == "timeout_seconds")
        let completion = try await offPool {
            try s.client().postJSON(
                "/v1/completions",
                jsonString(["model": "SmolLM2-135M-Instruct.Q4_1", "prompt": "Hi", "priority": "soon"]))
        }
        #expect(
            completion.status == 400 && (completion.json?["error"] as? [String: Any])?["param"] as? String == "priority"
        )
        let session = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
        let id = try #require(session.json?["id"] as? String)
        let turn = try await offPool {
            try s.client().postJSON(
                "/v1/sessions/\(id)/responses", jsonString(["prompt": "Hi", "timeout_seconds": -5]))
        }
        #expect(turn.status == 400 && turn.text.contains("timeout_seconds"))
        await finish(s)
    }
}
