import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// A Responses stream resumed as a browser's `EventSource` resumes it: every event's SSE `id:` is
/// its `sequence_number` on every connection, and a reconnect's `Last-Event-ID` continues after
/// that event, with no replay and no gap. The model is not the subject: a scripted backend
/// answers, held at a gate so "while it still runs" is a fact.
@Suite struct ResponsesResumeEndToEndTests {
    static let terminal = ["response.completed", "response.incomplete", "response.failed", "response.cancelled"]

    /// Six snapshots, then a wait until `released`, then four more and the end.
    static func backend(_ released: Locked<Bool>) -> ScriptedBackend {
        ScriptedBackend { _ in
            (1...6).map { ScriptedBackend.Step.text(String(repeating: "a", count: $0)) }
                + [
                    .hold {
                        while !released.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) }
                    }
                ]
                + (7...10).map { .text(String(repeating: "a", count: $0)) } + [.finish(.stop)]
        }
    }

    /// A GET of `path` with `headers`, read until `until` holds or the stream ends; the client
    /// stays open (pass it to `more` to read on) unless the stream ended.
    static func open(
        _ s: RunningServer, _ path: String, headers: [(String, String)] = [],
        until: @escaping @Sendable (SSEReader) -> Bool
    ) async throws -> (TestClient, Int, SSEReader) {
        try await offPool {
            let c = try s.client(timeout: 10)
            var head = "GET \(path) HTTP/1.1\r\nHost: localhost\r\n"
            for (k, v) in headers { head += "\(k): \(v)\r\n" }
            guard c.send(head + "\r\n") else { throw ClientError(description: "send failed") }
            let (status, _) = try c.readHead()
            var reader = SSEReader()
            if status == 200 { try c.readEvents(into: &reader, until: until) }
            return (c, status, reader)
        }
    }

    static func sequence(_ e: SSEReader.Event) -> Int? { jsonObject(e.data)["sequence_number"] as? Int }

    @Test func anEventSourceReconnectWithLastEventIDResumesWithoutReplayOrGap() async throws {
        let released = Locked(false)
        let backend = Self.backend(released)
        try await RunningServer.with(state: .ready(backend)) { s in
            let body = jsonString([
                "model": backend.modelName, "input": "Hi", "background": true, "stream": true,
            ])
            // The first connection: the POST's own stream, dropped after three deltas.
            let first = try await offPool { () -> SSEReader in
                let c = try s.client(timeout: 10)
                let (status, _) = try c.startStream("/v1/responses", body)
                guard status == 200 else { throw ClientError(description: "status \(status)") }
                var reader = SSEReader()
                try c.readEvents(into: &reader) { r in
                    r.events.filter { $0.name == "response.output_text.delta" }.count >= 3
                }
                c.close()
                return reader
            }
            let id = try #require(
                (jsonObject(first.events[0].data)["response"] as? [String: Any])?["id"] as? String)
            // Each event's SSE id is its sequence number, from 0.
            #expect(first.events.map(\.id) == first.events.map { Self.sequence($0).map(String.init) ?? "-" })
            #expect(first.events.first?.id == "0")
            let lastID = try #require(first.events.last?.id)

            // The reconnect, as EventSource makes it: same resource, Last-Event-ID; the response
            // goes on once it is connected (events made before and after the reconnect both count).
            let (client, status, partial) = try await Self.open(
                s, "/v1/responses/\(id)?stream=true", headers: [("Last-Event-ID", lastID)]
            ) { _ in true }
            #expect(status == 200)
            released.withLock { $0 = true }
            let second = try await offPool { () -> SSEReader in
                var r = partial
                try client.readEvents(into: &r) { r in r.events.contains { Self.terminal.contains($0.name) } }
                client.close()
                return r
            }
            #expect(second.events.first?.id == String(Int(lastID)! + 1), "no replay: \(second.events.map(\.id))")
            #expect(second.events.map(\.id) == second.events.map { Self.sequence($0).map(String.init) ?? "-" })
            // Both connections together: every event once, in order, and the whole answer.
            let all = first.events + second.events
            #expect(all.compactMap(Self.sequence) == Array(0..<all.count), "no gap, no duplicate")
            #expect(all.last?.name == "response.completed")
            let text = all.filter { $0.name == "response.output_text.delta" }
                .compactMap { jsonObject($0.data)["delta"] as? String }.joined()
            #expect(text == String(repeating: "a", count: 10))

            // After the end, from the stored record: the later of starting_after and Last-Event-ID counts.
            for (query, header, expectedFirst) in [("&starting_after=2", "5", 6), ("&starting_after=7", "5", 8)] {
                let (c, st, r) = try await Self.open(
                    s, "/v1/responses/\(id)?stream=true\(query)", headers: [("Last-Event-ID", header)]
                ) { r in r.events.contains { Self.terminal.contains($0.name) } }
                c.close()
                #expect(st == 200 && r.events.first?.id == String(expectedFirst), "\(query) \(header)")
                #expect(r.events.last?.id == all.last?.id)
            }
            // A Last-Event-ID that is no event's id is refused, naming the header.
            for header in ["seven", "-1"] {
                let refused = try await offPool {
                    try s.client(timeout: 10).request(
                        "GET", "/v1/responses/\(id)?stream=true", headers: [("Last-Event-ID", header)])
                }
                let e = WireError(refused)
                #expect(e.status == 400 && e.param == "Last-Event-ID", "\(header): \(refused.text)")
            }
        }
    }
}
