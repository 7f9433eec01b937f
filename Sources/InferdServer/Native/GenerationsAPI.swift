import Engine
import Foundation
import HTTPServer
import StructuredOutput

/// `POST /v1/generations`: one independent prompt, answered once or streamed as snapshots.
package struct GenerationRequestBody: Sendable {
    var prompt: String
    var instructions: String?
    var stream: Bool?
    var options: GenerationOptionsBody?
    /// `interactive` (default) or `background`: order in the engine's queue.
    var priority: GenerationPriority?
    /// The whole request (waiting, prompt, generation) must end within this many seconds.
    var timeoutSeconds: Double?
    /// Partitions the key's cache scope (see `CacheSalt`).
    var cacheSalt: String?

    /// `tools`, `tool_choice`, `parallel_tool_calls` (see `NativeToolFields`).
    var tools: NativeToolFields

    static let fieldNames = Set<String>([
        "prompt", "instructions", "stream", "options", "priority", "timeout_seconds", CacheSalt.field,
    ]).union(NativeToolFields.fieldNames)

    /// The body of `request`; an unknown field or a wrong value is a 400 naming it.
    package init(_ request: HTTPRequest) throws {
        let f = try NativeFields.body(of: request, allowed: Self.fieldNames)
        prompt = try f.requiredString("prompt")
        instructions = try f.string("instructions")
        stream = try f.bool("stream")
        options = try GenerationOptionsBody.read(f)
        priority = try f.choice("priority")
        timeoutSeconds = try f.double("timeout_seconds")
        cacheSalt = try CacheSalt.read(f)
        tools = try NativeToolFields(f)
    }
}

struct UsageBody: Codable, Sendable, Equatable {
    var promptTokens: Int
    var completionTokens: Int
    var cachedTokens: Int
    var totalTokens: Int

    init(_ u: GenerationUsage) {
        self.init(promptTokens: u.promptTokens, completionTokens: u.completionTokens, cachedTokens: u.cachedTokens)
    }

    init(promptTokens: Int, completionTokens: Int, cachedTokens: Int) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.cachedTokens = cachedTokens
        totalTokens = promptTokens + completionTokens
    }

    enum CodingKeys: String, CodingKey {
        case promptTokens = "prompt_tokens"
        case completionTokens = "completion_tokens"
        case cachedTokens = "cached_tokens"
        case totalTokens = "total_tokens"
    }
}

struct TimingsBody: Codable, Sendable, Equatable {
    var promptMs: Double
    var generationMs: Double
    var promptTokensPerSecond: Double
    var generationTokensPerSecond: Double

    init(_ t: GenerationTimings) {
        promptMs = (t.promptMilliseconds * 100).rounded() / 100
        generationMs = (t.generationMilliseconds * 100).rounded() / 100
        promptTokensPerSecond = (t.promptTokensPerSecond * 10).rounded() / 10
        generationTokensPerSecond = (t.generationTokensPerSecond * 10).rounded() / 10
    }

    enum CodingKeys: String, CodingKey {
        case promptMs = "prompt_ms"
        case generationMs = "generation_ms"
        case promptTokensPerSecond = "prompt_tokens_per_second"
        case generationTokensPerSecond = "generation_tokens_per_second"
    }
}

/// The non-streaming answer, and the `completed`/`cancelled` terminal events' payload.
struct GenerationBody: Codable, Sendable {
    var id: String
    var object = "response"
    var created: Int
    var model: String
    /// "completed" or "cancelled".
    var status: String
    var content: String
    var finishReason: String
    var usage: UsageBody
    var timings: TimingsBody
    /// Why it was cancelled (`client_disconnected`, `shutdown`, …); absent when completed.
    var reason: String?
    /// Structured (JSON) answers: the value (see `StructuredValue`); absent otherwise.
    var value: JSONValue?
    /// With `value`: false only when the answer is complete and validated.
    var partial: Bool?
    /// Answers with tools: the reasoning and the complete calls (see `NativeToolAnswer`).
    var reasoning: String?
    var toolCalls: [NativeToolCall]?
    /// With `options.logprobs`: the answer's tokens' entries (markup of calls included).
    var logprobs: [LogprobEntryBody]?

    enum CodingKeys: String, CodingKey {
        case id, object, created, model, status, content, usage, timings, reason, value, partial, reasoning, logprobs
        case finishReason = "finish_reason"
        case toolCalls = "tool_calls"
    }
}

extension GenerationBody {
    static let noTimings = GenerationTimings(
        promptMilliseconds: 0, generationMilliseconds: 0, promptTokensPerSecond: 0, generationTokensPerSecond: 0)

    /// A finished (completed or cancelled) generation's answer; `reason` as the caller words it.
    init(
        _ o: GenerationOutcome, id: String, model: String, reason: String?, structured: Bool,
        tools: ToolAnswerTracker? = nil, logprobs: LogprobRecorder? = nil
    ) {
        self.init(
            id: id, created: Int(Date().timeIntervalSince1970), model: model, status: o.status.rawValue,
            content: o.content, finishReason: (o.finishReason ?? .cancelled).rawValue, usage: UsageBody(o.usage),
            timings: TimingsBody(o.timings ?? Self.noTimings), reason: reason)
        if structured {
            (value, partial) = StructuredValue.final(o)
        }
        self.logprobs = logprobs.map { LogprobEntryBody.answer($0, text: o.content) }
        if let tools {
            let answer = NativeToolAnswer.final(o, tracker: tools)
            content = answer.content
            reasoning = answer.reasoning
            toolCalls = answer.toolCalls
            finishReason = answer.finishReason ?? finishReason
        }
    }
}
