import Foundation
import TestSupport
import Testing

/// `options.logprobs` on the native API (#34 part 5), default model: a generation's final body
/// has one entry per answer token (spelling it), the same as chat's for the same prompt; every
/// streamed snapshot holds the entries of all its tokens so far (a snapshot is the whole answer,
/// so a conflated one loses none), and a session turn carries them the same way.
@Suite(.serialized) struct NativeLogprobsEndToEndTests {
    static func post(_ s: RunningServer, _ path: String, _ body: [String: Any]) async throws -> RawResponse {
        let json = jsonString(body)
        return try await offPool { try s.client(timeout: 120).postJSON(path, json) }
    }

    static func stream(_ s: RunningServer, _ path: String, _ body: [String: Any]) async throws -> [SSEReader.Event] {
        let json = jsonString(body)
        let text = try await offPool { () -> String in
            let c = try s.client(timeout: 120)
            _ = try c.startStream(path, json)
            var reader = SSEReader()
            try c.readEvents(into: &reader) { $0.events.contains { $0.name == "completed" || $0.name == "error" } }
            return reader.text
        }
        return SSEReader(text: text).events
    }

    static func pairs(_ entries: Any?) -> [String] {
        (entries as? [[String: Any]] ?? []).map { "\($0["token"] as? String ?? "?")@\($0["logprob"] as? Double ?? 1)" }
    }

    static var options: [String: Any] { ["temperature": 0, "max_tokens": 16, "logprobs": true, "top_logprobs": 2] }

    @Test func generationsAndTurnsCarryEntriesInFinalBodiesAndSnapshots() async throws {
        try await RunningServer.with { s in
            let r = try await Self.post(
                s, "/v1/generations", ["prompt": "Name three colours.", "options": Self.options])
            let content = try #require(r.json?["content"] as? String, "\(r.text)")
            let entries = try #require(r.json?["logprobs"] as? [[String: Any]], "\(r.text)")
            let bytes = entries.flatMap { $0["bytes"] as? [Int] ?? [] }.map { UInt8($0) }
            #expect(String(decoding: bytes, as: UTF8.self) == content)
            #expect(entries.allSatisfy { ($0["top_logprobs"] as? [Any])?.count == 2 })
            // The same prompt through chat: the same tokens and values.
            let chat = try await Self.post(
                s, "/v1/chat/completions",
                [
                    "model": try SharedModel.engine().modelName,
                    "messages": [["role": "user", "content": "Name three colours."]], "temperature": 0,
                    "max_tokens": 16, "logprobs": true, "top_logprobs": 2,
                ])
            let chatEntries = ((chat.json?["choices"] as? [[String: Any]])?.first?["logprobs"] as? [String: Any])?[
                "content"]
            #expect(Self.pairs(entries) == Self.pairs(chatEntries))

            // Streamed: each snapshot's entries are the first completion_tokens of the final ones.
            let events = try await Self.stream(
                s, "/v1/generations", ["prompt": "Name three colours.", "options": Self.options, "stream": true])
            let snapshots = events.filter { $0.name == "snapshot" }.map { jsonObject($0.data) }
            #expect(!snapshots.isEmpty)
            let all = Self.pairs(entries)
            for snapshot in snapshots {
                let n = try #require(snapshot["completion_tokens"] as? Int)
                let mine = Self.pairs(snapshot["logprobs"])
                #expect(mine.count == min(n, all.count) && mine == Array(all.prefix(mine.count)), "\(n)")
            }
            let completed = try #require(events.last { $0.name == "completed" }).data
            #expect(Self.pairs(jsonObject(completed)["logprobs"]) == all)

            // A session turn, the same way.
            let session = try await Self.post(s, "/v1/sessions", [:])
            let id = try #require(session.json?["id"] as? String, "\(session.text)")
            let turn = try await Self.post(
                s, "/v1/sessions/\(id)/responses", ["prompt": "Name three colours.", "options": Self.options])
            let turnEntries = try #require(turn.json?["logprobs"] as? [[String: Any]], "\(turn.text)")
            let turnBytes = turnEntries.flatMap { $0["bytes"] as? [Int] ?? [] }.map { UInt8($0) }
            #expect(String(decoding: turnBytes, as: UTF8.self) == turn.json?["content"] as? String)
            let turnEvents = try await Self.stream(
                s, "/v1/sessions/\(id)/responses",
                ["prompt": "And three more.", "options": Self.options, "stream": true])
            let last = try #require(turnEvents.last { $0.name == "snapshot" }).data
            let final = try #require(turnEvents.last { $0.name == "completed" }).data
            let lastEntries = Self.pairs(jsonObject(last)["logprobs"])
            #expect(!lastEntries.isEmpty && Self.pairs(jsonObject(final)["logprobs"]).starts(with: lastEntries))
        }
    }

    @Test func withoutLogprobsThereAreNoneAndRefusalsNameTheField() async throws {
        try await RunningServer.with { s in
            let plain = try await Self.post(s, "/v1/generations", ["prompt": "Hi", "options": ["max_tokens": 2]])
            #expect(plain.status == 200 && plain.json?["logprobs"] == nil, "\(plain.text)")
            let cases: [([String: Any], String)] = [
                (["top_logprobs": 2], "options.top_logprobs"),
                (["logprobs": true, "top_logprobs": 21], "options.top_logprobs"),
                (["logprobs": "yes"], "options.logprobs"),
            ]
            for (options, param) in cases {
                let r = try await Self.post(s, "/v1/generations", ["prompt": "Hi", "options": options])
                #expect(r.status == 400, "\(options): \(r.text)")
                #expect(WireError(r).param == param, "\(options): \(r.text)")
            }
        }
    }
}
