import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Every body and SSE payload goes through one encoder with sorted keys: two identical greedy
/// requests give byte-identical answers once ids and times are blanked, and every event's keys
/// come in sorted order (consecutive snapshots used to differ).
@Suite struct DeterministicJSONTests {
    /// The body with the values that are meant to differ (ids, times, speeds, and how much of
    /// the prompt the prefix cache held, which depends on what ran before) blanked.
    static func normalized(_ text: String) -> String {
        var out = text
        for (pattern, replacement) in [
            (#""(id|request_id)":"[^"]*""#, #""$1":"…""#),
            (#""created":[0-9]+"#, #""created":0"#),
            (#""timings":\{[^}]*\}"#, #""timings":{}"#),
            (#""cached_tokens":[0-9]+"#, #""cached_tokens":0"#),
        ] {
            out = out.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return out
    }

    /// The top-level keys of a JSON object in the order they are written (strings skipped).
    static func topLevelKeys(_ json: String) -> [String] {
        var keys: [String] = []
        var depth = 0
        var inString = false
        var escaped = false
        var current = ""
        var lastString = ""
        for ch in json {
            if inString {
                if escaped {
                    escaped = false
                } else if ch == "\\" {
                    escaped = true
                } else if ch == "\"" {
                    inString = false
                    lastString = current
                } else {
                    current.append(ch)
                }
                continue
            }
            switch ch {
            case "\"":
                inString = true
                current = ""
            case "{", "[": depth += 1
            case "}", "]": depth -= 1
            case ":" where depth == 1: keys.append(lastString)
            default: break
            }
        }
        return keys
    }

    @Test func keyReaderSeesOrder() {
        #expect(Self.topLevelKeys(#"{"b":{"z":1,"a":2},"a":"x:\"y\"","c":[1,{"d":2}]}"#) == ["b", "a", "c"])
    }

    @Test func identicalGreedyRequestsGiveIdenticalBytes() async throws {
        try await RunningServer.with { s in
            let native = #"{"prompt":"Name three colours.","options":{"temperature":0,"max_tokens":24}}"#
            let model = try SharedModel.engine().modelName
            let chat =
                #"{"model":"\#(model)","messages":[{"role":"user","content":"Name three colours."}],"#
                + #""temperature":0,"max_tokens":24}"#
            for (path, body) in [("/v1/generations", native), ("/v1/chat/completions", chat)] {
                let a = try await offPool { try s.client().postJSON(path, body) }
                let b = try await offPool { try s.client().postJSON(path, body) }
                #expect(a.status == 200 && b.status == 200)
                #expect(a.text != b.text, "ids and times should differ, or this test proves nothing")
                #expect(Self.normalized(a.text) == Self.normalized(b.text), "\(path)\n\(a.text)\n\(b.text)")
                #expect(Self.topLevelKeys(a.text) == Self.topLevelKeys(a.text).sorted())
            }
        }
    }

    @Test func everyStreamedPayloadHasSortedKeys() async throws {
        try await RunningServer.with { s in
            let body = #"{"prompt":"List three colours.","stream":true,"options":{"temperature":0,"max_tokens":24}}"#
            func stream(_ path: String, _ body: String) async throws -> [SSEReader.Event] {
                try await offPool {
                    let c = try s.client()
                    _ = try c.startStream(path, body)
                    var reader = SSEReader()
                    _ = try c.readEvents(into: &reader) { r in
                        r.events.contains {
                            ["completed", "error", "cancelled"].contains($0.name) || $0.data == "[DONE]"
                        }
                    }
                    return reader.events
                }
            }
            let first = try await stream("/v1/generations", body)
            let second = try await stream("/v1/generations", body)
            #expect(first.filter { $0.name == "snapshot" }.count >= 2)
            let created = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
            let sid = try #require(created.json?["id"] as? String)
            let turn = try await stream("/v1/sessions/\(sid)/responses", body)
            let model = try SharedModel.engine().modelName
            let chat = try await stream(
                "/v1/chat/completions",
                #"{"model":"\#(model)","messages":[{"role":"user","content":"Hi"}],"stream":true,"max_tokens":8}"#)
            for event in first + second + turn + chat where event.data != "[DONE]" {
                let keys = Self.topLevelKeys(event.data)
                #expect(!keys.isEmpty && keys == keys.sorted(), "\(event.name): \(event.data)")
            }
            // The terminal event of two identical streams is the same bytes but for ids and times.
            let endA = try #require(first.last(where: { $0.name == "completed" }))
            let endB = try #require(second.last(where: { $0.name == "completed" }))
            #expect(Self.normalized(endA.data) == Self.normalized(endB.data))
        }
    }
}
