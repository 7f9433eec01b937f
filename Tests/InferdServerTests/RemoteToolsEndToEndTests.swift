import Foundation
import TestSupport
import Testing

/// Tool calling through `--backend openai` in front of `scripts/fake-upstream.py`: the tools go
/// upstream, the upstream's streamed calls come back as `message.tool_calls` (and a stream's
/// fragments add up to them), and an answer that breaks the request's tool rules is a 502
/// `upstream_failed` naming the rule, never passed on as if it kept them.
@Suite(.serialized) struct RemoteToolsEndToEndTests {
    typealias ServerProcess = SessionsRestartTests.ServerProcess
    typealias FakeUpstream = RemoteProxyEndToEndTests.FakeUpstream

    static var tools: [[String: Any]] {
        [
            [
                "type": "function",
                "function": [
                    "name": "get_weather",
                    "parameters": ["type": "object", "properties": ["city": ["type": "string"]]],
                ],
            ],
            ["type": "function", "function": ["name": "get_time"]],
        ]
    }

    /// get_weather strict, with a city and an optional unit.
    static var strictTools: [[String: Any]] {
        [
            [
                "type": "function",
                "function": [
                    "name": "get_weather", "strict": true,
                    "parameters": [
                        "type": "object", "required": ["city"], "additionalProperties": false,
                        "properties": ["city": ["type": "string"], "unit": ["enum": ["celsius", "fahrenheit"]]],
                    ],
                ],
            ]
        ]
    }

    /// A proxy over the fake upstream's `mode`, for `body`.
    static func withProxy(_ fake: FakeUpstream, _ mode: String, _ body: (ServerProcess) async throws -> Void)
        async throws
    {
        let proxy = try ServerProcess(
            dataDir: RemoteProxyEndToEndTests.tempDir(),
            extra: [
                "--backend", "openai", "--upstream", "http://127.0.0.1:\(fake.port)/\(mode)/v1", "--upstream-model",
                "fake", "--context-length", "2048",
            ])
        defer { proxy.stop() }
        try await body(proxy)
    }

    static func chat(_ extra: [String: Any] = [:]) -> [String: Any] {
        var body: [String: Any] = [
            "model": "fake", "max_tokens": 32, "tools": tools,
            "messages": [["role": "user", "content": "Weather and time in Paris?"]],
        ]
        for (k, v) in extra { body[k] = v }
        return body
    }

    static func message(_ r: RawResponse) -> [String: Any] {
        ((r.json?["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any]) ?? [:]
    }

    static func error(_ r: RawResponse) -> (code: String?, message: String) {
        let e = r.json?["error"] as? [String: Any]
        return (e?["code"] as? String, e?["message"] as? String ?? "")
    }

    /// The stream's events' data.
    static func stream(_ s: ServerProcess, _ body: [String: Any]) async throws -> [String] {
        var body = body
        body["stream"] = true
        let json = jsonString(body)
        let reader = try await offPool { () -> SSEReader in
            let c = try s.client()
            let (status, _) = try c.startStream("/v1/chat/completions", json)
            #expect(status == 200)
            var reader = SSEReader()
            _ = try c.readEvents(into: &reader) { _ in false }
            return reader
        }
        return reader.events.map(\.data)
    }

    @Test func callsComeBackAsToolCallsWithIdsAndTheReasoningApart() async throws {
        let fake = try FakeUpstream()
        defer { fake.stop() }
        try await Self.withProxy(fake, "tools") { proxy in
            let r = try await RemoteProxyEndToEndTests.post(proxy, "/v1/chat/completions", Self.chat())
            #expect(r.status == 200, "\(r.text)")
            let choice = (r.json?["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "tool_calls")
            let message = Self.message(r)
            #expect(message["reasoning_content"] as? String == "Let me check.")
            #expect((message["content"] as? String ?? "").isEmpty, "\(message)")
            let calls = try #require(message["tool_calls"] as? [[String: Any]])
            #expect(calls.count == 2)
            let ids = calls.compactMap { $0["id"] as? String }
            #expect(ids.count == 2 && Set(ids).count == 2 && ids.allSatisfy { $0.hasPrefix("call_") })
            let functions = calls.compactMap { $0["function"] as? [String: Any] }
            #expect(functions.map { $0["name"] as? String } == ["get_weather", "get_time"])
            #expect(functions.map { $0["arguments"] as? String } == [#"{"city": "Paris"}"#, #"{"zone": "CET"}"#])

            // Streamed: the fragments add up to the same calls, the reasoning to the same text.
            let data = try await Self.stream(proxy, Self.chat())
            #expect(data.last == "[DONE]", "\(data)")
            var arguments: [Int: String] = [:]
            var names: [Int: String] = [:]
            var reasoning = ""
            var finish: String?
            for event in data.dropLast() {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(event.utf8)) as? [String: Any])
                guard let choice = (object["choices"] as? [[String: Any]])?.first else { continue }
                if let f = choice["finish_reason"] as? String { finish = f }
                let delta = choice["delta"] as? [String: Any] ?? [:]
                reasoning += delta["reasoning_content"] as? String ?? ""
                for call in delta["tool_calls"] as? [[String: Any]] ?? [] {
                    let index = try #require(call["index"] as? Int)
                    let function = call["function"] as? [String: Any] ?? [:]
                    if let name = function["name"] as? String { names[index] = name }
                    arguments[index, default: ""] += function["arguments"] as? String ?? ""
                }
            }
            #expect(finish == "tool_calls")
            #expect(reasoning == "Let me check.")
            #expect(names == [0: "get_weather", 1: "get_time"])
            #expect(arguments == [0: #"{"city": "Paris"}"#, 1: #"{"zone": "CET"}"#])
        }
    }

    /// The Responses API does not check a remote engine's answers against the tool rules, so it
    /// refuses tools there (400 naming them) rather than pass unchecked calls on; without tools
    /// it answers as before.
    @Test func theResponsesAPIRefusesToolsOverARemoteEngine() async throws {
        let fake = try FakeUpstream()
        defer { fake.stop() }
        try await Self.withProxy(fake, "ok") { proxy in
            let tool: [String: Any] = ["type": "function", "name": "get_time"]
            let r = try await RemoteProxyEndToEndTests.post(
                proxy, "/v1/responses", ["model": "fake", "input": "Time?", "tools": [tool]])
            #expect(r.status == 400 && r.errorParam == "tools", "\(r.text)")
            let plain = try await RemoteProxyEndToEndTests.post(
                proxy, "/v1/responses", ["model": "fake", "input": "Time?", "max_output_tokens": 8])
            #expect(plain.status == 200, "\(plain.text)")
        }
    }

    /// The chat route hands the request's tools, choice, parallel calls and tool turns to the
    /// upstream (the echo mode answers with the body it received).
    @Test func theUpstreamGetsTheToolsChoiceAndToolTurns() async throws {
        let fake = try FakeUpstream()
        defer { fake.stop() }
        try await Self.withProxy(fake, "echo") { proxy in
            let body = Self.chat([
                "tool_choice": ["type": "function", "function": ["name": "get_time"]], "parallel_tool_calls": false,
                "messages": [
                    ["role": "user", "content": "Weather?"],
                    [
                        "role": "assistant", "content": "",
                        "tool_calls": [
                            [
                                "id": "call_1", "type": "function",
                                "function": ["name": "get_weather", "arguments": #"{"city":"Paris"}"#],
                            ]
                        ],
                    ],
                    ["role": "tool", "tool_call_id": "call_1", "content": "18 C"],
                ],
            ])
            let r = try await RemoteProxyEndToEndTests.post(proxy, "/v1/chat/completions", body)
            #expect(r.status == 200, "\(r.text)")
            let content = try #require(Self.message(r)["content"] as? String)
            let sent = try #require(try JSONSerialization.jsonObject(with: Data(content.utf8)) as? [String: Any])
            #expect((sent["tools"] as? [[String: Any]])?.count == 2)
            #expect(
                ((sent["tool_choice"] as? [String: Any])?["function"] as? [String: Any])?["name"] as? String
                    == "get_time")
            #expect(sent["parallel_tool_calls"] as? Bool == false)
            let messages = try #require(sent["messages"] as? [[String: Any]])
            #expect(messages.count == 3, "\(messages)")
            #expect((messages[1]["tool_calls"] as? [[String: Any]])?.first?["id"] as? String == "call_1")
            #expect(messages[2]["tool_call_id"] as? String == "call_1")
        }
    }

    /// `required` (or a named function) with an upstream that answers text, a call to a name
    /// that is not a tool, two calls where one at most is allowed, a call under `none`, a call
    /// to another function than the named one: each a 502 `upstream_failed` naming the rule,
    /// plain or streamed.
    @Test func answersThatBreakTheToolRulesAreUpstreamFailures() async throws {
        let fake = try FakeUpstream()
        defer { fake.stop() }
        let cases: [(mode: String, extra: [String: Any], says: String)] = [
            ("ok", ["tool_choice": "required"], "tool_choice is required"),
            (
                "ok", ["tool_choice": ["type": "function", "function": ["name": "get_weather"]]],
                "without calling it"
            ),
            ("unknowncall", [:], "'launch_rockets', which is not one of the request's tools"),
            ("tools", ["parallel_tool_calls": false], "parallel_tool_calls is false, but the upstream made 2 calls"),
            ("onecall", ["tool_choice": "none"], "tool_choice is none"),
            (
                "onecall", ["tool_choice": ["type": "function", "function": ["name": "get_time"]]],
                "but the upstream called 'get_weather'"
            ),
            ("badargs", [:], "not a JSON object"),
            ("wrongtype", ["tools": Self.strictTools], "do not match the strict tool's schema"),
        ]
        for c in cases {
            try await Self.withProxy(fake, c.mode) { proxy in
                let r = try await RemoteProxyEndToEndTests.post(proxy, "/v1/chat/completions", Self.chat(c.extra))
                #expect(r.status == 502, "\(c.mode) \(c.extra): \(r.text)")
                let e = Self.error(r)
                #expect(e.code == "upstream_failed", "\(r.text)")
                #expect(e.message.contains(c.says), "\(c.mode): \(e.message)")
                let data = try await Self.stream(proxy, Self.chat(c.extra))
                #expect(data.last != "[DONE]", "\(c.mode): a broken rule ended the stream as if complete")
                #expect(
                    data.last?.contains("upstream_failed") == true && data.last?.contains(c.says) == true,
                    "\(c.mode): \(data.last ?? "")")
            }
        }
        // The same answers within the rules pass.
        try await Self.withProxy(fake, "ok") { proxy in
            let r = try await RemoteProxyEndToEndTests.post(proxy, "/v1/chat/completions", Self.chat())
            #expect(r.status == 200, "\(r.text)")
            #expect(Self.message(r)["content"] as? String == "one two three four five")
        }
        // A strict tool's arguments in another member order and layout still match its schema.
        try await Self.withProxy(fake, "reordered") { proxy in
            let r = try await RemoteProxyEndToEndTests.post(
                proxy, "/v1/chat/completions", Self.chat(["tools": Self.strictTools]))
            #expect(r.status == 200, "\(r.text)")
            #expect((Self.message(r)["tool_calls"] as? [[String: Any]])?.count == 1)
        }
        try await Self.withProxy(fake, "onecall") { proxy in
            let r = try await RemoteProxyEndToEndTests.post(
                proxy, "/v1/chat/completions", Self.chat(["tool_choice": "required", "parallel_tool_calls": false]))
            #expect(r.status == 200, "\(r.text)")
            #expect((Self.message(r)["tool_calls"] as? [[String: Any]])?.count == 1)
        }
    }
}
