import Engine
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import InferdServer

/// Tools on the native API (#33 part 6), with a scripted backend reporting Qwen 3's template (so
/// the format is `hermes`): `/v1/generations` snapshots carry the calls so far (`partial` until a
/// call closes, ids kept to the end), a session keeps the calls and their results in its
/// transcript and shows them to the model on the next turn, results must answer calls it made,
/// and a turn cancelled in the middle of a call records no call. The script decides the text;
/// the grammars are tested with real models elsewhere (ToolCallingEndToEndTests).
@Suite struct NativeToolsEndToEndTests {
    static let tools =
        #"[{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]"#
    static let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"

    /// Where a script stops half-way through its call: `reached` once there, and it goes on
    /// when `open` (or ends when its generation is cancelled).
    final class Halfway: Sendable {
        private let state = Mutex((reached: false, open: false))
        var reached: Bool { state.withLock { $0.reached } }
        func open() { state.withLock { $0.open = true } }

        func hold() async {
            state.withLock { $0.reached = true }
            while !state.withLock({ $0.open }), !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
        }
    }

    /// A backend answering with a call until the conversation holds a tool result, then in text;
    /// with `halfway`, the call stops there until it is opened (or the generation cancelled).
    static func backend(halfway: Halfway? = nil) throws -> ScriptedBackend {
        ScriptedBackend(chatTemplateSource: try ToolCallingScriptedEndToEndTests.qwen3Template()) { request in
            guard case .conversation(_, let messages, _) = request.prompt.input else { return [.finish(.stop)] }
            if let result = messages.last(where: { $0.content.hasPrefix("Result of get_weather") }) {
                let answer = "It is \(result.content.split(separator: ":").last ?? "?") there."
                return answer.indices.map { .text(String(answer[...$0])) } + [.finish(.stop)]
            }
            let answer = "Let me check.\n" + call
            var steps: [ScriptedBackend.Step] = answer.indices.map { .text(String(answer[...$0])) }
            if let halfway { steps.insert(.hold { await halfway.hold() }, at: answer.count - 20) }
            return steps + [.finish(.stop)]
        }
    }

    func events(_ s: RunningServer, _ path: String, _ body: String) async throws -> [(
        name: String, data: [String: Any]
    )] {
        Self.parse(try await reader(s, path, body))
    }

    static func parse(_ reader: SSEReader) -> [(name: String, data: [String: Any])] {
        reader.events.map { ($0.name, jsonObject($0.data)) }
    }

    func reader(_ s: RunningServer, _ path: String, _ body: String) async throws -> SSEReader {
        try await offPool { () -> SSEReader in
            let c = try s.client(timeout: 30)
            _ = try c.startStream(path, body)
            var reader = SSEReader()
            try c.readEvents(into: &reader) { r in
                r.events.contains { ["completed", "cancelled", "error"].contains($0.name) }
            }
            return reader
        }
    }

    @Test func generationSnapshotsCarryTheCallSoFarAndTheAnswerItsCall() async throws {
        let halfway = Halfway()
        try await RunningServer.with(state: .ready(try Self.backend(halfway: halfway))) { s in
            let body = #"{"prompt": "Weather in Paris?", "stream": true, "tools": \#(Self.tools)}"#
            // The script goes on once a snapshot has shown the call half-written.
            let reader = try await offPool { () -> SSEReader in
                let c = try s.client(timeout: 30)
                _ = try c.startStream("/v1/generations", body)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { r in
                    if r.events.contains(where: { $0.data.contains(#""partial":true"#) }) { halfway.open() }
                    return r.events.contains { ["completed", "cancelled", "error"].contains($0.name) }
                }
                return reader
            }
            let events = Self.parse(reader)
            let snapshots = events.filter { $0.name == "snapshot" }.map(\.data)
            var sawPartial = false
            var ids = Set<String>()
            var previous = ""
            for snap in snapshots {
                let content = snap["content"] as? String ?? ""
                #expect(!content.contains("<tool_call") && !content.contains("{\"name\""), "markup in \(content)")
                for call in snap["tool_calls"] as? [[String: Any]] ?? [] {
                    ids.insert(call["id"] as? String ?? "")
                    #expect(call["name"] as? String == "get_weather")
                    let arguments = call["arguments"] as? String ?? ""
                    #expect(arguments.hasPrefix(previous), "arguments only grow: \(previous) then \(arguments)")
                    previous = arguments
                    if call["partial"] as? Bool == true { sawPartial = true }
                }
            }
            #expect(sawPartial, "a snapshot showed the call being written")
            let done = try #require(events.last { $0.name == "completed" }?.data, "\(events.map(\.name))")
            let calls = try #require(done["tool_calls"] as? [[String: Any]], "\(done)")
            #expect(calls.count == 1 && ids == [calls[0]["id"] as? String ?? "-"], "one id throughout: \(ids)")
            #expect(calls[0]["arguments"] as? String == #"{"city": "Paris"}"# && calls[0]["partial"] == nil)
            #expect(done["finish_reason"] as? String == "tool_calls" && done["content"] as? String == "Let me check.")
            // Not streamed: the same call.
            halfway.open()
            let r = try await offPool {
                try s.client().postJSON("/v1/generations", #"{"prompt": "Weather in Paris?", "tools": \#(Self.tools)}"#)
            }
            let json = try #require(r.json, "\(r.text)")
            let plain = try #require(json["tool_calls"] as? [[String: Any]], "\(r.text)")
            #expect(plain.first?["arguments"] as? String == #"{"city": "Paris"}"#)
            let id = plain.first?["id"] as? String ?? ""
            #expect(id.hasPrefix("call_"))
        }
    }

    @Test func aSessionKeepsCallsAndResultsAndShowsThemOnTheNextTurn() async throws {
        let backend = try Self.backend()
        try await RunningServer.with(state: .ready(backend)) { s in
            let created = try await offPool {
                try s.client().postJSON("/v1/sessions", #"{"instructions": "Be brief."}"#)
            }
            let sid = try #require(created.json?["id"] as? String)
            let first = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions/\(sid)/responses", #"{"prompt": "Weather in Paris?", "tools": \#(Self.tools)}"#)
            }
            let call = try #require((first.json?["tool_calls"] as? [[String: Any]])?.first, "\(first.text)")
            let id = try #require(call["id"] as? String)
            #expect(
                first.json?["finish_reason"] as? String == "tool_calls"
                    && first.json?["content"] as? String == "Let me check.")
            // A result for a call nobody made is refused, naming the field; nothing is recorded.
            let wrong = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions/\(sid)/responses",
                    #"{"tool_results": [{"tool_call_id": "call_nobody", "content": "x"}], "tools": \#(Self.tools)}"#)
            }
            #expect(wrong.status == 400 && wrong.errorParam == "tool_results[0].tool_call_id", "\(wrong.text)")
            let second = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions/\(sid)/responses",
                    #"{"tool_results": [{"tool_call_id": "\#(id)", "content": "18 C"}], "tools": \#(Self.tools)}"#)
            }
            #expect(
                second.status == 200 && second.json?["content"] as? String == "It is  18 C there.", "\(second.text)")
            #expect(second.json?["tool_calls"] == nil && second.json?["finish_reason"] as? String == "stop")
            // The model saw its call in its own markup and the result answering it.
            guard case .conversation(_, let seen, _) = try #require(backend.requests.last).prompt.input else {
                Issue.record("not a conversation")
                return
            }
            #expect(
                seen.contains {
                    $0.role == .assistant && $0.content.contains("<tool_call>") && $0.content.contains("Paris")
                })
            #expect(seen.contains { $0.content == "Result of get_weather (\(id)): 18 C" }, "\(seen)")
            // The transcript keeps both, with the call's id.
            let got = try await offPool { try s.client().request("GET", "/v1/sessions/\(sid)") }
            let transcript = try #require(got.json?["transcript"] as? [[String: Any]])
            #expect(
                transcript.map { $0["type"] as? String ?? "" } == [
                    "instructions", "prompt", "response", "tool_result", "response",
                ])
            #expect((transcript[2]["tool_calls"] as? [[String: Any]])?.first?["id"] as? String == id)
            #expect(transcript[2]["content"] as? String == "Let me check.")
            #expect(transcript[3]["tool_call_id"] as? String == id && transcript[3]["content"] as? String == "18 C")
        }
    }

    @Test func chatWithASessionIdKeepsTheCallAndTakesItsResult() async throws {
        let chatTools =
            #"[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]"#
        try await RunningServer.with(state: .ready(try Self.backend())) { s in
            let created = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
            let sid = try #require(created.json?["id"] as? String)
            func chat(_ messages: String, stream: Bool = false) async throws -> RawResponse {
                try await offPool {
                    try s.client().postJSON(
                        "/v1/chat/completions",
                        #"{"model": "scripted", "session_id": "\#(sid)", "tools": \#(chatTools), "stream": \#(stream), "messages": \#(messages)}"#
                    )
                }
            }
            let first = try await chat(#"[{"role": "user", "content": "Weather in Paris?"}]"#)
            let choice = (first.json?["choices"] as? [[String: Any]])?.first
            let message = try #require(choice?["message"] as? [String: Any], "\(first.text)")
            let call = try #require((message["tool_calls"] as? [[String: Any]])?.first, "\(first.text)")
            let id = try #require(call["id"] as? String)
            #expect(choice?["finish_reason"] as? String == "tool_calls")
            // The result of a call the session never made names the message.
            let stray = try await chat(#"[{"role": "tool", "tool_call_id": "call_nobody", "content": "x"}]"#)
            #expect(stray.status == 400 && stray.errorParam == "messages[0].tool_call_id", "\(stray.text)")
            // The client may resend the whole history: only what follows the last assistant
            // message is the new turn.
            let history =
                #"[{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "\#(id)", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "\#(id)", "content": "18 C"}]"#
            let second = try await chat(history)
            let answer = (second.json?["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any]
            #expect(answer?["content"] as? String == "It is  18 C there.", "\(second.text)")
            let got = try await offPool { try s.client().request("GET", "/v1/sessions/\(sid)") }
            let transcript = try #require(got.json?["transcript"] as? [[String: Any]])
            #expect(
                transcript.map { $0["type"] as? String ?? "" } == ["prompt", "response", "tool_result", "response"])
            #expect((transcript[1]["tool_calls"] as? [[String: Any]])?.first?["id"] as? String == id)
        }
    }

    @Test func aTurnCancelledInTheMiddleOfACallRecordsNoCall() async throws {
        let halfway = Halfway()
        try await RunningServer.with(state: .ready(try Self.backend(halfway: halfway))) { s in
            let created = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
            let sid = try #require(created.json?["id"] as? String)
            let stream = Task {
                try await reader(
                    s, "/v1/sessions/\(sid)/responses",
                    #"{"prompt": "Weather?", "stream": true, "tools": \#(Self.tools)}"#)
            }
            // Cancelled once the script is held with the call half written.
            for _ in 0..<3000 where !halfway.reached { try await Task.sleep(for: .milliseconds(10)) }
            #expect(halfway.reached)
            let r = try await offPool { try s.client().request("GET", "/v1/sessions/\(sid)") }
            let rid = try #require((r.json?["transcript"] as? [[String: Any]])?.last?["request_id"] as? String)
            let cancel = try await offPool { try s.client().postJSON("/v1/requests/\(rid)/cancel", "{}") }
            #expect(cancel.status == 200, "\(cancel.text)")
            let streamed = Self.parse(try await stream.value)
            let snapshots = streamed.filter { $0.name == "snapshot" }.map(\.data)
            let last = try #require(snapshots.last)
            let shownCalls = last["tool_calls"] as? [[String: Any]] ?? []
            #expect(
                shownCalls.first?["partial"] as? Bool == true, "the last snapshot showed a call being written: \(last)")
            let end = try #require(streamed.last { $0.name == "cancelled" }?.data, "\(streamed.map(\.name))")
            #expect(end["tool_calls"] == nil && end["content"] as? String == "Let me check.", "\(end)")
            let got = try await offPool { try s.client().request("GET", "/v1/sessions/\(sid)") }
            let transcript = try #require(got.json?["transcript"] as? [[String: Any]])
            let response = try #require(transcript.last)
            #expect(response["status"] as? String == "cancelled" && response["tool_calls"] == nil, "\(response)")
            #expect(response["content"] as? String == "Let me check.", "\(response)")
        }
    }

    @Test func refusalsNameTheirFields() async throws {
        try await RunningServer.with(state: .ready(try Self.backend())) { s in
            let cases: [(String, String, String)] = [
                ("/v1/generations", #"{"prompt": "x", "tools": [{"type": "web_search"}]}"#, "tools[0].type"),
                ("/v1/generations", #"{"prompt": "x", "tool_choice": "required"}"#, "tool_choice"),
                (
                    "/v1/generations",
                    #"{"prompt": "x", "tools": \#(Self.tools), "tool_choice": {"type": "function", "name": "nope"}}"#,
                    "tool_choice.name"
                ),
                (
                    "/v1/generations",
                    #"{"prompt": "x", "tools": \#(Self.tools), "options": {"format": {"type": "json_object"}}}"#,
                    "options.format"
                ),
                ("/v1/generations", #"{"prompt": "x", "tool_results": []}"#, "tool_results"),
            ]
            for (path, body, param) in cases {
                let r = try await offPool { try s.client().postJSON(path, body) }
                #expect(r.status == 400 && r.errorParam == param, "\(body): \(r.text)")
            }
            let created = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
            let sid = try #require(created.json?["id"] as? String)
            let turnCases: [(String, String)] = [
                (#"{"tool_results": [{"tool_call_id": "call_x"}]}"#, "tool_results[0].content"),
                (
                    #"{"tool_results": [{"tool_call_id": "call_x", "content": "y", "name": "z"}]}"#,
                    "tool_results[0].name"
                ),
                (#"{"tool_results": {"tool_call_id": "call_x"}}"#, "tool_results"),
                (#"{"tool_results": [{"tool_call_id": "call_x", "content": "y"}]}"#, "tool_results[0].tool_call_id"),
            ]
            for (body, param) in turnCases {
                let r = try await offPool { try s.client().postJSON("/v1/sessions/\(sid)/responses", body) }
                #expect(r.status == 400 && r.errorParam == param, "\(body): \(r.text)")
            }
        }
    }
}
