import Engine
import Foundation
import Testing

@testable import Backend
@testable import RemoteBackend

extension RemoteEndToEnd.FakeUpstreamTests {
    static let weather = ToolDefinition(
        name: "get_weather", description: "The weather in a city",
        parameters: #"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#, strict: true)
    static let time = ToolDefinition(name: "get_time")

    func toolRequest(_ b: OpenAIRemoteBackend, extras: TemplateExtras) -> BackendRequest {
        let messages = [
            ChatMessage(role: .user, content: "Weather in Paris?"),
            ChatMessage(
                role: .assistant, content: "",
                toolCalls: [ToolCall(id: "call_a", name: "get_weather", arguments: #"{"city":"Paris"}"#)]),
            ChatMessage(role: .tool, content: "18 C", toolCallID: "call_a"),
            ChatMessage(role: .user, content: "And the time?"),
        ]
        let prompt = b.prepare(.conversation(instructions: nil, messages: messages, extras: extras))
        return BackendRequest(prompt: prompt, maxTokens: 16, sampling: .greedy, label: "t")
    }

    /// The upstream gets the tool turns in OpenAI's shape, the tools nested under `function`
    /// with their schemas as written, `tool_choice`, `parallel_tool_calls` and
    /// `chat_template_kwargs`.
    @Test func theRequestCarriesToolsChoiceParallelAndToolTurns() async throws {
        let upstream = try FakeUpstream()
        defer { upstream.stop() }
        let b = backend([upstream.url("echo")])
        let extras = TemplateExtras(
            tools: [Self.weather, Self.time], arguments: #"{"enable_thinking":false}"#,
            choice: .function("get_weather"), parallel: false)
        let result = try await run(b, toolRequest(b, extras: extras)).get()
        let sent = try #require(try JSONSerialization.jsonObject(with: Data(result.content.utf8)) as? [String: Any])
        let messages = try #require(sent["messages"] as? [[String: Any]])
        #expect(messages.count == 4)
        let call = try #require((messages[1]["tool_calls"] as? [[String: Any]])?.first)
        #expect(call["id"] as? String == "call_a" && call["type"] as? String == "function")
        let function = try #require(call["function"] as? [String: Any])
        #expect(function["name"] as? String == "get_weather")
        #expect(function["arguments"] as? String == #"{"city":"Paris"}"#)
        #expect(messages[1]["content"] is NSNull)
        #expect(messages[2]["role"] as? String == "tool" && messages[2]["tool_call_id"] as? String == "call_a")
        #expect(messages[2]["content"] as? String == "18 C")
        let tools = try #require(sent["tools"] as? [[String: Any]])
        #expect(tools.count == 2 && tools.allSatisfy { $0["type"] as? String == "function" })
        let first = try #require(tools[0]["function"] as? [String: Any])
        #expect(first["name"] as? String == "get_weather" && first["strict"] as? Bool == true)
        #expect(first["description"] as? String == "The weather in a city")
        #expect((first["parameters"] as? [String: Any])?["required"] as? [String] == ["city"])
        #expect((tools[1]["function"] as? [String: Any])?["parameters"] == nil)
        let choice = try #require(sent["tool_choice"] as? [String: Any])
        #expect(choice["type"] as? String == "function")
        #expect((choice["function"] as? [String: Any])?["name"] as? String == "get_weather")
        #expect(sent["parallel_tool_calls"] as? Bool == false)
        #expect((sent["chat_template_kwargs"] as? [String: Any])?["enable_thinking"] as? Bool == false)

        // Without tools: none of the three is sent; the choice names travel as strings.
        let plain = try await run(b, toolRequest(b, extras: TemplateExtras())).get()
        let sentPlain = try #require(
            try JSONSerialization.jsonObject(with: Data(plain.content.utf8)) as? [String: Any])
        #expect(sentPlain["tools"] == nil && sentPlain["tool_choice"] == nil && sentPlain["parallel_tool_calls"] == nil)
        #expect(sentPlain["chat_template_kwargs"] == nil)
        let required = try await run(
            b, toolRequest(b, extras: TemplateExtras(tools: [Self.time], choice: .required))
        ).get()
        let sentRequired = try #require(
            try JSONSerialization.jsonObject(with: Data(required.content.utf8)) as? [String: Any])
        #expect(sentRequired["tool_choice"] as? String == "required")
        #expect(sentRequired["parallel_tool_calls"] as? Bool == true)
    }

    /// Reasoning and two calls streamed in fragments become one growing text: `<think>…</think>`,
    /// then the calls in the generic markup, each snapshot extending the last, the list closed
    /// only at the end.
    @Test func streamedCallsAndReasoningBecomeGrowingGenericMarkup() async throws {
        let upstream = try FakeUpstream()
        defer { upstream.stop() }
        let b = backend([upstream.url("tools")])
        let events = Events()
        let result = try await run(
            b, toolRequest(b, extras: TemplateExtras(tools: [Self.weather, Self.time])), events: events
        ).get()
        let expected =
            "<think>Let me check.</think>\n"
            + #"{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"zone": "CET"}}]}"#
        #expect(result.content == expected)
        #expect(result.finishReason == .stop)
        #expect(result.usage.completionTokens == 9)
        let snapshots = events.all.compactMap { e -> String? in
            if case .snapshot(let content, _) = e { return content }
            return nil
        }
        #expect(snapshots.count >= 7, "\(snapshots)")
        for (earlier, later) in zip(snapshots, snapshots.dropFirst()) {
            #expect(later.hasPrefix(earlier) && later != earlier, "\(earlier) → \(later)")
        }
        #expect(snapshots.last == expected)
        #expect(snapshots.first == "<think>Let me")
        #expect(!snapshots.dropLast().contains { $0.hasSuffix("]}") })
    }

    /// Text then a call: the markup starts on its own line, after the text.
    @Test func textBeforeACallIsFollowedByTheMarkupOnItsOwnLine() async throws {
        let upstream = try FakeUpstream()
        defer { upstream.stop() }
        let b = backend([upstream.url("textcall")])
        let result = try await run(b, toolRequest(b, extras: TemplateExtras(tools: [Self.weather]))).get()
        #expect(
            result.content == "Checking.\n"
                + #"{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}"#)
    }

    /// A call whose arguments are not a JSON object cannot be passed on as a call: the upstream
    /// failed.
    @Test func aCallWhoseArgumentsAreNotAnObjectIsAnUpstreamFailure() async throws {
        let upstream = try FakeUpstream()
        defer { upstream.stop() }
        let b = backend([upstream.url("badargs")])
        let outcome = await run(b, toolRequest(b, extras: TemplateExtras(tools: [Self.weather])))
        guard case .failure(.upstreamFailed(let why)) = outcome else {
            Issue.record("expected upstreamFailed, got \(outcome)")
            return
        }
        #expect(why.contains("get_weather") && why.contains("not a JSON object"), "\(why)")
    }

    /// Tools change the answer: requests that differ only in their tools, choice or parallel
    /// calls never share a generation.
    @Test func toolsChoiceAndParallelArePartOfTheSingleFlightKey() throws {
        let b = backend(["http://127.0.0.1:1/v1"])
        let base = TemplateExtras(tools: [Self.weather])
        let variants = [
            base, TemplateExtras(tools: [Self.weather, Self.time]),
            TemplateExtras(tools: [Self.weather], choice: .required),
            TemplateExtras(tools: [Self.weather], parallel: false),
            TemplateExtras(tools: [Self.weather], arguments: #"{"enable_thinking":false}"#),
        ]
        let keys = variants.map { SingleFlightKey(toolRequest(b, extras: $0)) }
        #expect(Set(keys).count == variants.count)
        #expect(SingleFlightKey(toolRequest(b, extras: base)) == keys[0])
    }
}
