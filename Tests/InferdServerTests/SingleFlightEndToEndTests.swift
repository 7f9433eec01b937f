import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Identical greedy streams over real sockets with the real model share one generation.
@Suite struct SingleFlightEndToEndTests {
    /// A prompt no other suite sends: the model is shared by every suite in the process, and so
    /// are its generations in flight.
    static let body = jsonString([
        "prompt": "Describe, slowly, a walk through a forest where every tree is the same tree.", "stream": true,
        "options": ["temperature": 0, "max_tokens": 128, "ignore_eos": true],
    ])

    struct Stream: Sendable {
        var requestID: String
        var reader: SSEReader
        var final: [String: Any] { jsonObject(reader.events.last { $0.name == "completed" }?.data ?? "") }
        var snapshots: [String] {
            reader.events.filter { $0.name == "snapshot" }.map { jsonObject($0.data)["content"] as? String ?? "" }
        }
    }

    /// Starts a stream and reads it until its first snapshot: its generation is then in flight.
    static func begin(_ client: TestClient, body: String = body) async throws -> Stream {
        try await offPool {
            let (status, headers) = try client.startStream("/v1/generations", body)
            guard status == 200 else { throw ClientError(description: "status \(status)") }
            var reader = SSEReader()
            try client.readEvents(into: &reader) { $0.events.contains { $0.name == "snapshot" } }
            let id = headers.first { $0.0.lowercased() == "x-request-id" }?.1 ?? ""
            return Stream(requestID: id, reader: reader)
        }
    }

    /// Two of the same request, the second started once the first has its first snapshot, both
    /// read to the end.
    static func twoStreams(_ s: RunningServer) async throws -> (Stream, Stream) {
        let (c1, c2) = (try s.client(), try s.client())
        let first = try await begin(c1)
        let second = try await begin(c2)
        async let firstDone = finish(c1, first)
        async let secondDone = finish(c2, second)
        return try await (firstDone, secondDone)
    }

    static func finish(_ client: TestClient, _ stream: Stream) async throws -> Stream {
        try await offPool {
            var s = stream
            try client.readEvents(into: &s.reader) { r in
                r.events.contains { ["completed", "cancelled", "error"].contains($0.name) }
            }
            return s
        }
    }

    static func joinedCounter(_ s: RunningServer) async throws -> String? {
        let r = try await offPool { try s.client().request("GET", "/metrics") }
        return r.text.split(separator: "\n").first { $0.hasPrefix("inferd_single_flight_joined_total ") }
            .map(String.init)
    }

    /// The same prompt with a budget no machine spends before the second request arrives: the
    /// join must not depend on how fast the first generation runs (at 128 tokens a fast CPU
    /// finished it before a loaded test process had sent the second request). Both clients
    /// leave long before the budget is spent.
    static let longBody = jsonString([
        "prompt": "Describe, slowly, a walk through a forest where every tree is the same tree.", "stream": true,
        "options": ["temperature": 0, "max_tokens": 2000, "ignore_eos": true],
    ])

    /// Reads until `count` more snapshots than the reader holds now have arrived.
    static func readSnapshots(_ client: TestClient, _ stream: Stream, more count: Int) async throws -> Stream {
        try await offPool {
            var s = stream
            let target = s.snapshots.count + count
            try client.readEvents(into: &s.reader) { r in r.events.filter { $0.name == "snapshot" }.count >= target }
            return s
        }
    }

    @Test func twoIdenticalGreedyStreamsShareOneGeneration() async throws {
        try await RunningServer.with { s in
            #expect(try await Self.joinedCounter(s) == "inferd_single_flight_joined_total 0")
            let (c1, c2) = (try s.client(), try s.client())
            var a = try await Self.begin(c1, body: Self.longBody)
            var b = try await Self.begin(c2, body: Self.longBody)
            a = try await Self.readSnapshots(c1, a, more: 3)
            b = try await Self.readSnapshots(c2, b, more: 3)
            // The leader leaves; the generation goes on for the joiner.
            c1.close()
            b = try await Self.readSnapshots(c2, b, more: 3)
            // The joiner's stream is a whole stream: started first, snapshots extending each other,
            // the same text as the leader's wherever both saw it.
            #expect(b.reader.events.first?.name == "started")
            for (x, y) in zip(b.snapshots, b.snapshots.dropFirst()) { #expect(y.hasPrefix(x) && y.count > x.count) }
            let (la, lb) = (try #require(a.snapshots.last), try #require(b.snapshots.last))
            #expect(!la.isEmpty && (la.hasPrefix(lb) || lb.hasPrefix(la)), "\(la) | \(lb)")
            // The last one leaving stops it: both are counted as cancelled, well short of the budget.
            c2.close()
            #expect(await eventually(timeout: .seconds(30)) { s.cancelledGenerations() == 2 })
            #expect((s.metrics.value("inferd_completion_tokens_total") ?? 0) < 2 * 2000)
            #expect(try await Self.joinedCounter(s) == "inferd_single_flight_joined_total 1")
            let line = try #require(s.logs.matching("request joined an identical generation").first)
            #expect(
                line.contains("request_id=\(b.requestID)") && line.contains("leader_request_id=\(a.requestID)"),
                "\(line)")
        }
    }

    @Test func turnedOffEveryStreamComputesItsOwn() async throws {
        try await RunningServer.with(configure: { $0.singleFlight = false }) { s in
            let (a, b) = try await Self.twoStreams(s)
            #expect(a.final["finish_reason"] as? String == "length" && b.final["finish_reason"] as? String == "length")
            #expect(try await Self.joinedCounter(s) == "inferd_single_flight_joined_total 0")
            #expect(s.logs.matching("request joined an identical generation").isEmpty)
        }
    }
}
