import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// `/v1/generations` over a real socket with the real model.
@Suite struct GenerationsEndToEndTests {
    @Test func answersOnceExactlyAsTheReference() async throws {
        try await RunningServer.with { s in
            let ref = try GreedyCase.named("fact_question")
            let body = jsonString([
                "prompt": ref.messages[0].content, "options": ["temperature": 0, "max_tokens": 48],
            ])
            let r = try await offPool { try s.client().postJSON("/v1/generations", body) }
            #expect(r.status == 200)
            #expect(r.header("X-Request-Id") != nil)
            let json = try #require(r.json)
            #expect(json["content"] as? String == ref.generatedText)
            #expect(json["finish_reason"] as? String == "stop")
            #expect(json["status"] as? String == "completed")
            let usage = try #require(json["usage"] as? [String: Any])
            #expect(usage["prompt_tokens"] as? Int == ref.promptIDs.count)
            #expect(usage["completion_tokens"] as? Int == ref.generatedIDs.count)
        }
    }

    @Test func streamsSnapshotsThenOneTerminalEvent() async throws {
        try await RunningServer.with { s in
            let ref = try GreedyCase.named("list_request")
            let body = jsonString([
                "prompt": ref.messages[0].content, "stream": true, "options": ["temperature": 0, "max_tokens": 48],
            ])
            let (status, headers, reader) = try await offPool { () -> (Int, [(String, String)], SSEReader) in
                let c = try s.client()
                let (status, headers) = try c.startStream("/v1/generations", body)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { r in
                    r.events.contains { ["completed", "error", "cancelled"].contains($0.name) }
                }
                return (status, headers, reader)
            }
            #expect(status == 200)
            #expect(headers.contains { $0.0.lowercased() == "content-type" && $0.1.hasPrefix("text/event-stream") })
            let events = reader.events
            #expect(events.first?.name == "started")
            let snapshots = events.filter { $0.name == "snapshot" }.map {
                jsonObject($0.data)["content"] as? String ?? ""
            }
            #expect(snapshots.count >= 2)
            // Each snapshot is the whole answer so far: it extends the previous one, never a delta.
            for (a, b) in zip(snapshots, snapshots.dropFirst()) { #expect(b.hasPrefix(a) && b.count > a.count) }
            let terminal = events.filter { ["completed", "cancelled", "error"].contains($0.name) }
            #expect(terminal.count == 1 && terminal.first?.name == "completed")
            #expect(events.last?.name == "completed")
            let done = jsonObject(terminal.first?.data ?? "")
            #expect(done["content"] as? String == ref.generatedText)
            #expect(snapshots.last.map { ref.generatedText.hasPrefix($0) } == true)
            // Event ids count up from 1.
            #expect(events.map(\.id) == (1...events.count).map(String.init))
        }
    }

    @Test func disconnectDuringAStreamStopsGenerationWithinOneStep() async throws {
        try await RunningServer.with { s in
            let body = jsonString([
                "prompt": "Write a very long essay about the history of the Roman Empire.", "stream": true,
                "options": ["temperature": 0, "max_tokens": 2000, "ignore_eos": true],
            ])
            let client = try s.client()
            let read = try await offPool { () -> Int in
                _ = try client.startStream("/v1/generations", body)
                var reader = SSEReader()
                try client.readEvents(into: &reader) { $0.events.filter { $0.name == "snapshot" }.count >= 5 }
                client.close()
                return reader.events.count
            }
            #expect(read >= 5)
            let cancelled = try #require(await s.cancelledGeneration())
            #expect((0...1).contains(cancelled.stepsAfterCancel), "\(cancelled)")
            #expect(cancelled.completionTokens < 200, "generation ran on after the client left: \(cancelled)")
            #expect(await eventually { s.metrics.value("inferd_active_streams") == 0 })
        }
    }

    @Test func disconnectDuringAPlainRequestStopsGeneration() async throws {
        try await RunningServer.with { s in
            let body = jsonString([
                "prompt": "Count from one to one thousand in words.",
                "options": ["temperature": 0, "max_tokens": 3000, "ignore_eos": true],
            ])
            let client = try s.client()
            try await offPool {
                var head = "POST /v1/generations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                head += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                client.send(head)
                Thread.sleep(forTimeInterval: 0.5)
                client.close()
            }
            let cancelled = try #require(await s.cancelledGeneration())
            #expect((0...1).contains(cancelled.stepsAfterCancel), "\(cancelled)")
        }
    }

    @Test func shutdownCancelsAStreamWithReasonShutdown() async throws {
        let s = try RunningServer.start { $0.drainSeconds = 0.3 }
        let body = jsonString([
            "prompt": "Tell me a long story.", "stream": true,
            "options": ["temperature": 0, "max_tokens": 3000, "ignore_eos": true],
        ])
        let client = try s.client()
        _ = try await offPool { () -> Bool in
            _ = try client.startStream("/v1/generations", body)
            var reader = SSEReader()
            return try client.readEvents(into: &reader) { $0.events.contains { $0.name == "snapshot" } }
        }
        async let stopped: Void = s.server.shutdown()
        let reader = try await offPool { () -> SSEReader in
            var reader = SSEReader()
            try client.readEvents(into: &reader) { $0.events.contains { $0.name == "cancelled" } }
            return reader
        }
        await stopped
        let cancelled = try #require(reader.events.first { $0.name == "cancelled" })
        let json = jsonObject(cancelled.data)
        #expect(json["reason"] as? String == "shutdown")
        #expect(json["finish_reason"] as? String == "cancelled")
        #expect((json["content"] as? String)?.isEmpty == false)
    }

    @Test func stopStringsEndTheAnswerWithoutTheStopString() async throws {
        try await RunningServer.with { s in
            let ref = try GreedyCase.named("list_request")
            let cut = try #require(ref.generatedText.range(of: "3."))
            let body = jsonString([
                "prompt": ref.messages[0].content,
                "options": ["temperature": 0, "max_tokens": 48, "stop": ["3.", "zzz"]],
            ])
            let r = try await offPool { try s.client().postJSON("/v1/generations", body) }
            let json = try #require(r.json)
            #expect(json["content"] as? String == String(ref.generatedText[..<cut.lowerBound]))
            #expect(json["finish_reason"] as? String == "stop")
        }
    }

    @Test func sameSeedSameAnswer() async throws {
        try await RunningServer.with { s in
            func ask(_ seed: Int) async throws -> String {
                let body = jsonString([
                    "prompt": "Invent a name for a cat.",
                    "options": ["temperature": 1.0, "seed": seed, "max_tokens": 24],
                ])
                let r = try await offPool { try s.client().postJSON("/v1/generations", body) }
                return try #require(r.json?["content"] as? String)
            }
            let a = try await ask(7)
            let b = try await ask(7)
            #expect(a == b)
            var differs = false
            for seed in 8...11 where try await ask(seed) != a { differs = true }
            #expect(differs, "five different seeds all gave the same sampled answer")
        }
    }

    @Test func badRequestsGetClearErrors() async throws {
        try await RunningServer.with { s in
            func post(_ body: String, contentType: String = "application/json") async throws -> RawResponse {
                try await offPool {
                    try s.client().request(
                        "POST", "/v1/generations", headers: [("Content-Type", contentType)], body: Array(body.utf8))
                }
            }
            let overflow = try await post(#"{"prompt": "hi", "options": {"max_tokens": 9000}}"#)
            #expect(overflow.status == 400 && overflow.errorCode == "context_length_exceeded")
            let message = (overflow.json?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("9000") && message.contains("8192"), "\(message)")
            let option = try await post(#"{"prompt": "hi", "options": {"temperature": -1}}"#)
            #expect(option.status == 400 && option.errorCode == "invalid_option")
            #expect(try await post(#"{"prompt": "hi""#).errorCode == "invalid_json")
            #expect(try await post(#"{"prompt": ""}"#).status == 400)
            #expect(try await post(#"{"promt": "hi"}"#).status == 400)
            #expect(try await post(#"{"prompt": "hi"}"#, contentType: "text/plain").status == 415)
            let get = try await offPool { try s.client().request("GET", "/v1/generations") }
            #expect(get.status == 405)
            // The server still answers after all of that.
            let ok = try await post(#"{"prompt": "Say hi.", "options": {"max_tokens": 2}}"#)
            #expect(ok.status == 200)
        }
    }

    @Test func healthIs503UntilTheModelIsLoaded() async throws {
        let loading = try RunningServer.start(state: .loading)
        let r = try await offPool { try loading.client().request("GET", "/health") }
        #expect(r.status == 503 && r.json?["status"] as? String == "loading")
        let refused = try await offPool {
            try loading.client().postJSON("/v1/generations", #"{"prompt": "hi"}"#)
        }
        #expect(refused.status == 503 && refused.errorCode == "model_loading")
        await loading.server.shutdown()

        let ready = try RunningServer.start()
        let ok = try await offPool { try ready.client().request("GET", "/health") }
        #expect(ok.status == 200 && ok.json?["status"] as? String == "ok")
        #expect((ok.json?["model"] as? String)?.isEmpty == false)
        // The default model: a llama file of Q4_1 matrices, a Q8_0 embedding and F32 norms.
        #expect(ok.json?["architecture"] as? String == "llama")
        #expect(ok.json?["weight_types"] as? [String] == ["F32", "Q4_1", "Q8_0"])
        // What the weights take, from the file's tensor table: every matrix (the norm vectors
        // left out); the tied Q8_0 embedding is also the output head, so a token reads all of
        // them plus one embedding row. Where the CPU has interleaved forms (Q4_1 and Q8_0 are
        // the same size in them) every matrix is copied and only the embedding's lookups read
        // the file; without them all is read in place.
        let file = try GGUFFile(path: SharedModel.path)
        var total = 0
        for (name, info) in file.tensors where info.shape.count > 1 { total += try file.tensorData(name).count }
        let embedding = try file.tensorData("token_embd.weight").count
        let embeddingRow = embedding / (file.tensors["token_embd.weight"]?.shape.last ?? 1)
        let weights = try #require(ok.json?["weights"] as? [String: Any], "\(ok.text)")
        #expect(weights["total_bytes"] as? Int == total)
        #expect(weights["active_bytes_per_token"] as? Int == total + embeddingRow)
        let copied = weights["copied_bytes"] as? Int
        if copied == 0 {
            #expect(weights["mapped_bytes"] as? Int == total && weights["copies"] as? String == "all")
        } else {
            #expect(copied == total && weights["mapped_bytes"] as? Int == embedding, "\(weights)")
            #expect(weights["copies"] as? String == "all")
        }
        let store = ok.json?["store"] as? [String: Any]
        #expect(store?["kind"] as? String == "sqlite" && store?["status"] as? String == "ok", "\(ok.text)")
        await ready.server.shutdown()
    }

    /// The `model loaded` line states what the weights take, as the file's tensor table counts
    /// them (every matrix; copied where the CPU has interleaved forms, see the health test).
    @Test func theLoadLogSaysWhatTheWeightsTake() async throws {
        let logs = LogCapture()
        let host = ModelHost()
        host.load(path: SharedModel.path, threads: 1, logger: logs.logger)
        #expect(await eventually(timeout: .seconds(60)) { !logs.matching("model loaded").isEmpty })
        let line = try #require(logs.matching("model loaded").first)
        let file = try GGUFFile(path: SharedModel.path)
        var total = 0
        for (name, info) in file.tensors where info.shape.count > 1 { total += try file.tensorData(name).count }
        #expect(line.contains("weight_bytes=\(total)") && line.contains("weight_copies=all"), "\(line)")
        #expect(line.contains("weight_copied_bytes=") && line.contains("weight_mapped_bytes="), "\(line)")
        #expect(line.contains("weight_active_bytes_per_token="), "\(line)")
    }

    @Test func aModelThatFailsToLoadIsReportedAndNeverServed() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-bad-\(UUID()).gguf").path
        try Data("this is not a GGUF file".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let logs = LogCapture()
        let host = ModelHost()
        let toldTheOwner = Locked(false)
        host.load(path: path, threads: 1, logger: logs.logger) { toldTheOwner.withLock { $0 = true } }
        #expect(await eventually { toldTheOwner.withLock { $0 } })
        guard case .failed(let why) = host.current else {
            Issue.record("expected a failed state, got \(host.current)")
            return
        }
        #expect(!why.isEmpty)
        let line = try #require(logs.matching("model load failed").first)
        #expect(line.contains("error [") && line.contains("path=\(path)"), "\(line)")

        try await RunningServer.with(state: host.current) { s in
            let health = try await offPool { try s.client().request("GET", "/health") }
            #expect(health.status == 503 && health.json?["status"] as? String == "failed")
            #expect(health.json?["error"] as? String == why)
            let refused = try await offPool { try s.client().postJSON("/v1/generations", #"{"prompt": "hi"}"#) }
            #expect(refused.status == 503 && refused.errorCode == "model_unavailable")
        }
    }

    @Test func metricsArePrometheusText() async throws {
        try await RunningServer.with { s in
            _ = try await offPool {
                try s.client().postJSON("/v1/generations", #"{"prompt": "Say hi.", "options": {"max_tokens": 3}}"#)
            }
            let r = try await offPool { try s.client().request("GET", "/metrics") }
            #expect(r.status == 200)
            #expect(r.header("Content-Type")?.hasPrefix("text/plain") == true)
            let text = r.text
            for name in [
                "inferd_http_requests_total", "inferd_completion_tokens_total", "process_resident_memory_bytes",
                "inferd_open_connections", "inferd_active_streams", "inferd_generations_total",
            ] {
                #expect(text.contains("# TYPE \(name) "), "missing \(name)")
            }
            let rss = text.split(separator: "\n").first { $0.hasPrefix("process_resident_memory_bytes ") }
            #expect((rss.flatMap { Double($0.split(separator: " ")[1]) } ?? 0) > 50_000_000)
        }
    }
}
