import Backend
import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// `reasoning_budget` on a random-weight Qwen 3 (the repository's tiny fixture) whose template
/// opens `<think>` in the generation prompt, as DeepSeek R1 distills and QwQ do: such a model
/// never closes its reasoning by itself within the test's tokens, so the budget is what closes
/// it. The vocabulary (SmolLM2's) spells `</think>` in several tokens, all forced in turn.
@Suite(.serialized) struct ReasoningBudgetTinyModelTests {
    /// Qwen 3's template, changed to end the generation prompt with `<think>\n` unless thinking
    /// is turned off (which still closes an empty block, as the real template does).
    static func openingTemplate() throws -> String {
        let source = try String(
            contentsOf: TestPaths.packageRoot.appendingPathComponent(
                "Tests/EngineTests/Fixtures/templates/qwen3.jinja"),
            encoding: .utf8)
        let opened = source.replacingOccurrences(
            of: "{{- '<think>\\n\\n</think>\\n\\n' }}",
            with: "{{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- else %}\n        {{- '<think>\\n' }}")
        precondition(opened != source, "the qwen3 fixture changed: update the test's template")
        return opened
    }

    static func engine(template: String) throws -> InferenceEngine {
        try InferenceEngine(
            path: TestPaths.referenceRoot.appendingPathComponent("tiny/tiny-qwen3.gguf").path, threads: 2,
            chatTemplate: template)
    }

    static func chat(_ engine: InferenceEngine, _ extra: String, stream: Bool = false, maxTokens: Int = 48) -> String {
        #"""
        {"model": "\#(engine.modelName)", "messages": [{"role": "user", "content": "Think about the time."}],
         "temperature": 0, "max_tokens": \#(maxTokens), "stream": \#(stream)\#(extra)}
        """#
    }

    static func message(_ r: RawResponse) -> [String: Any] {
        ((r.json?["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any]) ?? [:]
    }

    @Test func thePromptOpensTheReasoningUnlessThinkingIsOff() throws {
        let engine = try Self.engine(template: try Self.openingTemplate())
        let messages = [ChatMessage(role: .user, content: "Hi")]
        #expect(try engine.prepare(.conversation(instructions: nil, messages: messages)).opensReasoning)
        let off = TemplateExtras(arguments: #"{"enable_thinking":false}"#)
        #expect(try !engine.prepare(.conversation(instructions: nil, messages: messages, extras: off)).opensReasoning)
        let real = try ToolCallingTinyModelTests.engine("tiny-qwen3", template: "qwen3")
        #expect(try !real.prepare(.conversation(instructions: nil, messages: messages)).opensReasoning)
        #expect(PreparedPrompt.opensReasoning("<|im_start|>assistant\n<think>\n"))
        #expect(PreparedPrompt.opensReasoning("<think>"))
        #expect(!PreparedPrompt.opensReasoning("<think>\n\n</think>\n\n"))
        #expect(!PreparedPrompt.opensReasoning("x<think>y"))
    }

    @Test func theBudgetClosesTheReasoningAndTheAnswerFollows() async throws {
        let engine = try Self.engine(template: try Self.openingTemplate())
        let backend = RecordingBackend(engine)
        try await RunningServer.with(state: .ready(backend)) { s in
            // Unbounded, the random model reasons through every token it is given.
            let free = try await offPool { try s.client().postJSON("/v1/chat/completions", Self.chat(engine, "")) }
            #expect(free.status == 200, "\(free.text)")
            let freeMessage = Self.message(free)
            #expect(backend.lastReasoning().tokens == 48, "\(free.text)")
            #expect(freeMessage["content"] as? String == nil || freeMessage["content"] as? String == "", "\(free.text)")
            for budget in [0, 6] {
                let r = try await offPool {
                    try s.client().postJSON(
                        "/v1/chat/completions", Self.chat(engine, #", "reasoning_budget": \#(budget)"#))
                }
                #expect(r.status == 200, "\(r.text)")
                let m = Self.message(r)
                let reasoning = m["reasoning_content"] as? String
                let written = backend.lastReasoning()
                #expect(written.tokens == budget, "\(r.text)")
                #expect(written.text.trimmingCharacters(in: .whitespacesAndNewlines) == reasoning ?? "", "\(r.text)")
                let content = m["content"] as? String ?? ""
                #expect(!content.isEmpty, "the answer goes on after </think>: \(r.text)")
                #expect(!content.contains("think>"), "\(r.text)")
            }
            // Streamed: the same split, in deltas.
            let reader = try await offPool { () -> SSEReader in
                let c = try s.client()
                _ = try c.startStream(
                    "/v1/chat/completions", Self.chat(engine, #", "reasoning_budget": 6"#, stream: true))
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.data == "[DONE]" } }
                return reader
            }
            var reasoning = ""
            var content = ""
            for event in reader.events.dropLast() {
                let delta =
                    (jsonObject(event.data)["choices"] as? [[String: Any]])?.first?["delta"] as? [String: Any] ?? [:]
                reasoning += delta["reasoning_content"] as? String ?? ""
                content += delta["content"] as? String ?? ""
            }
            #expect(backend.lastReasoning().tokens == 6 && !content.isEmpty, "\(reasoning) | \(content)")
        }
    }

    @Test func aRequiredCallStillComesWithinTheBudget() async throws {
        let engine = try Self.engine(template: try Self.openingTemplate())
        let backend = RecordingBackend(engine)
        try await RunningServer.with(state: .ready(backend)) { s in
            for budget in [0, 5] {
                let body = Self.chat(
                    engine,
                    #", "tools": \#(ToolCallingTinyModelTests.tools), "tool_choice": "required", "parallel_tool_calls": false, "reasoning_budget": \#(budget)"#,
                    maxTokens: 120)
                let r = try await offPool { try s.client().postJSON("/v1/chat/completions", body) }
                #expect(r.status == 200, "\(r.text)")
                let choice = (r.json?["choices"] as? [[String: Any]])?.first ?? [:]
                #expect(choice["finish_reason"] as? String == "tool_calls", "\(r.text)")
                let m = Self.message(r)
                // The grammar lets the reasoning run on; the budget closes it.
                #expect(backend.lastReasoning().tokens == budget, "\(r.text)")
                let calls = m["tool_calls"] as? [[String: Any]] ?? []
                #expect(calls.count == 1, "\(r.text)")
                let f = calls.first?["function"] as? [String: Any] ?? [:]
                #expect(["get_time", "ping"].contains(f["name"] as? String ?? ""), "\(r.text)")
                #expect(
                    (try? JSONSerialization.jsonObject(with: Data((f["arguments"] as? String ?? "").utf8)))
                        is [String: Any],
                    "\(r.text)")
            }
        }
    }

    /// Anthropic's `thinking`: `budget_tokens` is the same budget; the answer's first block is the
    /// thinking, then the text; streamed, thinking deltas come first in a block of their own.
    /// `disabled` turns the template's thinking off.
    @Test func theMessagesAPIThinksWithinItsBudget() async throws {
        let engine = try Self.engine(template: try Self.openingTemplate())
        let backend = RecordingBackend(engine)
        @Sendable func body(_ thinking: String, stream: Bool = false) -> String {
            #"{"model": "\#(engine.modelName)", "max_tokens": 48, "stream": \#(stream), "temperature": 0, "thinking": \#(thinking), "messages": [{"role": "user", "content": "Think about the time."}]}"#
        }
        try await RunningServer.with(state: .ready(backend)) { s in
            let r = try await offPool {
                try s.client().postJSON("/v1/messages", body(#"{"type": "enabled", "budget_tokens": 6}"#))
            }
            #expect(r.status == 200, "\(r.text)")
            let blocks = r.json?["content"] as? [[String: Any]] ?? []
            #expect(blocks.map { $0["type"] as? String ?? "" } == ["thinking", "text"], "\(r.text)")
            let written = backend.lastReasoning()
            #expect(written.tokens == 6, "\(r.text)")
            #expect(
                (blocks.first?["thinking"] as? String ?? "-")
                    == written.text.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(r.text)")
            let text = blocks.last?["text"] as? String ?? ""
            #expect(!text.isEmpty && text.contains("think>") == false, "\(r.text)")

            let reader = try await offPool { () -> SSEReader in
                let c = try s.client()
                _ = try c.startStream(
                    "/v1/messages", body(#"{"type": "enabled", "budget_tokens": 6}"#, stream: true))
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.name == "message_stop" } }
                return reader
            }
            let starts = reader.events.filter { $0.name == "content_block_start" }.map {
                ((jsonObject($0.data)["content_block"] as? [String: Any])?["type"] as? String) ?? ""
            }
            #expect(starts == ["thinking", "text"], "\(reader.events.map(\.data))")
            let thinking = reader.events.compactMap {
                (jsonObject($0.data)["delta"] as? [String: Any])?["thinking"] as? String
            }.joined()
            #expect(thinking == blocks.first?["thinking"] as? String, "\(thinking)")

            let off = try await offPool { try s.client().postJSON("/v1/messages", body(#"{"type": "disabled"}"#)) }
            #expect(off.status == 200, "\(off.text)")
            let offBlocks = off.json?["content"] as? [[String: Any]] ?? []
            #expect(!offBlocks.contains { $0["type"] as? String == "thinking" }, "\(off.text)")
            let tooBig = try await offPool {
                try s.client().postJSON("/v1/messages", body(#"{"type": "enabled", "budget_tokens": 48}"#))
            }
            #expect(tooBig.status == 400, "\(tooBig.text)")
            #expect(
                ((tooBig.json?["error"] as? [String: Any])?["message"] as? String)?.hasPrefix("thinking.budget_tokens:")
                    == true)
        }
    }

    /// On the Responses API: the reasoning item holds the budget's tokens, the message follows.
    @Test func theResponsesAPIKeepsTheBudgetInItsReasoningItem() async throws {
        let engine = try Self.engine(template: try Self.openingTemplate())
        let backend = RecordingBackend(engine)
        try await RunningServer.with(state: .ready(backend)) { s in
            let body =
                #"{"model": "\#(engine.modelName)", "input": "Think.", "temperature": 0, "max_output_tokens": 40, "reasoning_budget": 5}"#
            let r = try await offPool { try s.client().postJSON("/v1/responses", body) }
            #expect(r.status == 200, "\(r.text)")
            let output = r.json?["output"] as? [[String: Any]] ?? []
            #expect(output.map { $0["type"] as? String } == ["reasoning", "message"], "\(r.text)")
            let written = backend.lastReasoning()
            #expect(written.tokens == 5, "\(r.text)")
            let text = (output.first?["content"] as? [[String: Any]])?.first?["text"] as? String
            #expect(written.text.trimmingCharacters(in: .whitespacesAndNewlines) == text, "\(r.text)")
            let usage = r.json?["usage"] as? [String: Any] ?? [:]
            let reasoning = (usage["output_tokens_details"] as? [String: Any])?["reasoning_tokens"] as? Int ?? 0
            #expect(reasoning >= 1 && reasoning <= 5, "\(usage)")
        }
    }

    @Test func refusalsNameTheField() async throws {
        let thinking = try Self.engine(template: try Self.openingTemplate())
        let plain = try ToolCallingTinyModelTests.engine("tiny-qwen2", template: "qwen2.5")
        func refused(_ engine: InferenceEngine, _ path: String, _ body: String) async throws {
            try await RunningServer.with(state: .ready(engine)) { s in
                let r = try await offPool { try s.client().postJSON(path, body) }
                #expect(r.status == 400, "\(r.text)")
                #expect((r.json?["error"] as? [String: Any])?["param"] as? String == "reasoning_budget", "\(r.text)")
            }
        }
        // A template that does not think, thinking turned off, a negative or fractional budget, a session.
        try await refused(plain, "/v1/chat/completions", Self.chat(plain, #", "reasoning_budget": 5"#))
        try await refused(
            thinking, "/v1/chat/completions",
            Self.chat(thinking, #", "reasoning_budget": 5, "chat_template_kwargs": {"enable_thinking": false}"#))
        try await refused(thinking, "/v1/chat/completions", Self.chat(thinking, #", "reasoning_budget": -1"#))
        try await refused(thinking, "/v1/chat/completions", Self.chat(thinking, #", "reasoning_budget": 1.5"#))
        try await refused(
            thinking, "/v1/chat/completions", Self.chat(thinking, #", "reasoning_budget": 5, "session_id": "s1""#))
        let responses = { (engine: InferenceEngine, extra: String) in
            #"{"model": "\#(engine.modelName)", "input": "Hi", "max_output_tokens": 8, "reasoning_budget": 4\#(extra)}"#
        }
        try await refused(plain, "/v1/responses", responses(plain, ""))
        try await refused(thinking, "/v1/responses", responses(thinking, #", "conversation": "conv_x""#))
        // Over a remote engine the upstream samples: refused, not forwarded half-kept.
        let remote = ForwardingBackend(ScriptedBackend(reply: "hi"))
        try await RunningServer.with(state: .ready(remote)) { s in
            let r = try await offPool {
                try s.client().postJSON(
                    "/v1/chat/completions",
                    #"{"model": "scripted", "messages": [{"role": "user", "content": "Hi"}], "reasoning_budget": 3}"#)
            }
            #expect(r.status == 400, "\(r.text)")
            #expect((r.json?["error"] as? [String: Any])?["param"] as? String == "reasoning_budget", "\(r.text)")
        }
    }
}

/// The engine, recording the token ids of every answer it generated, so the reasoning is counted
/// in the tokens the model wrote (re-encoding its text may split it differently).
final class RecordingBackend: GenerationBackend {
    let engine: InferenceEngine
    let answers = Locked<[[Int32]]>([])
    init(_ engine: InferenceEngine) { self.engine = engine }
    var modelName: String { engine.modelName }
    var modelAliases: Set<String> { engine.modelAliases }
    var architecture: String { engine.architecture }
    var weightTypes: [String] { engine.weightTypes }
    var contextLength: Int { engine.contextLength }
    var vocabularySize: Int { engine.vocabularySize }
    var activeGenerations: Int { engine.activeGenerations }
    var kvCache: (any KVCacheCapability)? { engine.kvCache }
    var chatTemplateSource: String? { engine.chatTemplateSource }
    var rendersTools: Bool { engine.rendersTools }
    func makeConstraint(grammar: CompiledGrammar, identity: String) -> (any GenerationConstraint)? {
        engine.makeConstraint(grammar: grammar, identity: identity)
    }
    func reasoningBudget(_ budget: Int, startsInReasoning: Bool, inner: (any GenerationConstraint)?)
        -> (any GenerationConstraint)?
    {
        (engine as any GenerationBackend).reasoningBudget(budget, startsInReasoning: startsInReasoning, inner: inner)
    }
    func prepare(_ input: PromptInput) throws(ChatTemplateError) -> PreparedPrompt { try engine.prepare(input) }
    func checkCapacity() throws(GenerationError) { try engine.checkCapacity() }
    func submit(_ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void)
        throws(GenerationError) -> PendingGeneration
    {
        let pending = try (engine as any GenerationBackend).submit(request, onEvent: onEvent)
        let answers = self.answers
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            let result = try await pending.result()
            answers.withLock { $0.append(result.tokens) }
            return result
        }
    }
    func shutdown() { engine.shutdown() }

    /// The last answer's reasoning tokens: those before the first `</think>` (the prompt opened
    /// the reasoning), and the text they decode to.
    func lastReasoning() -> (tokens: Int, text: String) {
        let tokens = answers.withLock { $0.last ?? [] }
        let close = engine.tokenizer.encode("</think>")
        let end = (0...max(tokens.count - close.count, 0)).first { tokens[$0...].starts(with: close) } ?? tokens.count
        return (end, engine.tokenizer.decode(Array(tokens[..<end])))
    }
}

/// A scripted backend that says it forwards tools to a remote engine (`--backend openai`).
final class ForwardingBackend: GenerationBackend {
    let wrapped: ScriptedBackend
    init(_ wrapped: ScriptedBackend) { self.wrapped = wrapped }
    var modelName: String { wrapped.modelName }
    var modelAliases: Set<String> { wrapped.modelAliases }
    var architecture: String { wrapped.architecture }
    var weightTypes: [String] { wrapped.weightTypes }
    var contextLength: Int { wrapped.contextLength }
    var vocabularySize: Int { wrapped.vocabularySize }
    var activeGenerations: Int { wrapped.activeGenerations }
    var kvCache: (any KVCacheCapability)? { nil }
    var forwardsTools: Bool { true }
    func prepare(_ input: PromptInput) throws(ChatTemplateError) -> PreparedPrompt { wrapped.prepare(input) }
    func checkCapacity() throws(GenerationError) { try wrapped.checkCapacity() }
    func submit(_ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void)
        throws(GenerationError) -> PendingGeneration
    { try wrapped.submit(request, onEvent: onEvent) }
    func shutdown() { wrapped.shutdown() }
}
