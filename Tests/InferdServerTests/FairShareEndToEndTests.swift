import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// Fair shares over HTTP with the real model and two API keys: key A floods (streams, a
/// background response, a session turn) past its share and gets 429 `key_busy`; key B's
/// one-token request is served, ahead of A's waiting ones, as soon as a place frees. The engine
/// has two places and six waiting slots (`per_key_max_generations` -1: a share of 4); it is this
/// suite's own.
@Suite(.serialized) struct FairShareEndToEndTests {
    static let keyA = "key-a-0123456789abcdef"
    static let keyB = "key-b-0123456789abcdef"
    static let metrics = Metrics()
    static let engine = Result {
        guard FileManager.default.fileExists(atPath: SharedModel.path) else {
            throw ClientError(description: "model missing at \(SharedModel.path): run `make model`")
        }
        return try InferenceEngine(
            path: SharedModel.path, threads: 2, admission: AdmissionPolicy(maxActiveSequences: 2, maxQueue: 6),
            metrics: metrics)
    }

    /// Runs until its client leaves; each a different prompt, so none shares a generation.
    static var endless: String {
        jsonString([
            "prompt": "Count from one to one thousand. (\(UUID().uuidString))", "stream": true,
            "options": ["temperature": 0, "max_tokens": 1000, "ignore_eos": true],
        ])
    }

    static func auth(_ key: String) -> [(String, String)] { [("Authorization", "Bearer \(key)")] }

    /// Starts a stream of `key` and returns once it has produced text (`running`) or heard its
    /// place in the queue; with the event it waited for.
    func stream(_ s: RunningServer, key: String, until name: String) async throws -> (TestClient, Int, String) {
        let client = try s.client()
        let (status, data) = try await offPool { () -> (Int, String) in
            let (status, _) = try client.startStream("/v1/generations", Self.endless, headers: Self.auth(key))
            guard status == 200 else { return (status, "") }
            var reader = SSEReader()
            try client.readEvents(into: &reader) { $0.events.contains { $0.name == name } }
            return (status, reader.events.first { $0.name == name }?.data ?? "")
        }
        return (client, status, data)
    }

    func post(_ s: RunningServer, _ path: String, key: String, _ body: [String: Any]) async throws -> RawResponse {
        let json = jsonString(body)
        return try await offPool { try s.client().postJSON(path, json, headers: Self.auth(key)) }
    }

    @Test func aFloodingKeyGets429AtItsShareAndAnotherKeysOneTokenRequestRunsNext() async throws {
        let engine = try Self.engine.get()
        let s = try RunningServer.start(state: .ready(engine), metrics: Self.metrics) { c in
            c.apiKeys = "\(Self.keyA),\(Self.keyB)"
            c.maxActiveSequences = 2
            c.maxQueue = 6
        }
        #expect(s.app.configuration.effectivePerKeyMaxGenerations == 4)
        let session = try await post(s, "/v1/sessions", key: Self.keyA, [:])
        let sessionID = try #require(session.json?["id"] as? String)

        // A holds both places and waits for a third: three of its four.
        let (running1, status1, _) = try await stream(s, key: Self.keyA, until: "snapshot")
        let (running2, status2, _) = try await stream(s, key: Self.keyA, until: "snapshot")
        let (waiting, status3, _) = try await stream(s, key: Self.keyA, until: "queued")
        #expect(status1 == 200 && status2 == 200 && status3 == 200)
        // A background response holds no connection and counts all the same: the fourth.
        let background = try await post(
            s, "/v1/responses", key: Self.keyA,
            [
                "model": engine.modelName, "input": "Count to one thousand.", "background": true,
                "max_output_tokens": 1000, "ignore_eos": true, "temperature": 0,
            ])
        #expect(background.status == 200, "\(background.text)")
        let backgroundID = try #require(background.json?["id"] as? String)

        // Past its share, each way A asks is 429 key_busy with Retry-After: the server has room.
        let (over, overStatus, _) = try await stream(s, key: Self.keyA, until: "queued")
        over.close()
        #expect(overStatus == 429)
        let plain = try await post(
            s, "/v1/generations", key: Self.keyA, ["prompt": "Hi", "options": ["max_tokens": 1]])
        #expect(plain.status == 429 && plain.errorCode == "key_busy", "\(plain.text)")
        #expect(Int(plain.header("Retry-After") ?? "").map { $0 >= 1 } == true)
        #expect((plain.json?["error"] as? [String: Any])?["type"] as? String == "rate_limit_error")
        let moreBackground = try await post(
            s, "/v1/responses", key: Self.keyA,
            ["model": engine.modelName, "input": "Hi", "background": true, "max_output_tokens": 1])
        #expect(moreBackground.status == 429 && moreBackground.errorCode == "key_busy", "\(moreBackground.text)")
        let turn = try await post(
            s, "/v1/sessions/\(sessionID)/responses", key: Self.keyA, ["prompt": "Hi", "options": ["max_tokens": 1]])
        #expect(turn.status == 429 && turn.errorCode == "key_busy", "\(turn.text)")
        let chat = try await post(
            s, "/v1/chat/completions", key: Self.keyA,
            ["model": engine.modelName, "messages": [["role": "user", "content": "Hi"]], "max_tokens": 1])
        #expect(chat.status == 429 && chat.errorCode == "key_busy", "\(chat.text)")
        #expect(Self.metrics.value("inferd_key_busy_total") == 5)

        // B's one-token request waits (no place is free) ahead of A's waiting ones, and takes the
        // first place that frees: first come, first served would give it to A's waiting stream,
        // which runs until its client leaves, and B would time out.
        let queuedBefore = Self.metrics.value("inferd_queue_length") ?? 0
        let b = Task {
            try await post(
                s, "/v1/generations", key: Self.keyB,
                ["prompt": "Hi", "timeout_seconds": 60, "options": ["max_tokens": 1]])
        }
        #expect(
            await eventually(timeout: .seconds(30)) { Self.metrics.value("inferd_queue_length") == queuedBefore + 1 })
        running1.close()
        let answer = try await b.value
        #expect(answer.status == 200, "\(answer.text)")
        #expect((answer.json?["usage"] as? [String: Any])?["completion_tokens"] as? Int == 1, "\(answer.text)")

        let cancelled = try await post(s, "/v1/responses/\(backgroundID)/cancel", key: Self.keyA, [:])
        #expect(cancelled.status == 200, "\(cancelled.text)")
        running2.close()
        waiting.close()
        await s.server.shutdown()
        #expect(await eventually(timeout: .seconds(30)) { Self.metrics.value("inferd_active_sequences") == 0 })
        #expect(Self.metrics.value("inferd_queue_length") == 0)
    }
}
