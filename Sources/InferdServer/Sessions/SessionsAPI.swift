import Engine
import HTTPServer
import Sessions
import StructuredOutput

/// `POST /v1/sessions` (the body is optional).
package struct CreateSessionBody: Sendable {
    var instructions: String?
    var options: GenerationOptionsBody?
    var onBusy: BusyPolicy?
    var metadata: [String: String]?

    static let fieldNames: Set<String> = ["instructions", "options", "on_busy", "metadata"]

    package init(_ request: HTTPRequest) throws {
        let f = try NativeFields.body(of: request, allowed: Self.fieldNames, optional: true)
        instructions = try f.string("instructions")
        options = try GenerationOptionsBody.read(f)
        onBusy = try f.choice("on_busy")
        metadata = try f.metadata()
    }
}

/// `POST /v1/sessions/{id}`: replaces the session's `metadata`.
package struct UpdateSessionBody: Sendable {
    var metadata: [String: String]

    package init(_ request: HTTPRequest) throws {
        let f = try NativeFields.body(of: request, allowed: ["metadata"])
        guard let metadata = try f.metadata() else {
            throw HTTPError.badRequest("missing field 'metadata'", code: .invalidRequest, param: "metadata")
        }
        self.metadata = metadata
    }
}

/// `POST /v1/sessions/{id}/responses`.
package struct SessionTurnRequestBody: Sendable {
    var prompt: String
    var stream: Bool?
    var options: GenerationOptionsBody?
    var onBusy: BusyPolicy?
    var onCancel: CancelPolicy?
    var priority: GenerationPriority?
    var timeoutSeconds: Double?
    /// `tools`, `tool_choice`, `parallel_tool_calls` and `tool_results` (see `NativeToolFields`).
    var tools: NativeToolFields

    static let fieldNames = Set<String>([
        "prompt", "stream", "options", "on_busy", "on_cancel", "priority", "timeout_seconds",
        NativeToolFields.resultsField,
    ]).union(NativeToolFields.fieldNames)

    package init(_ request: HTTPRequest) throws {
        let f = try NativeFields.body(of: request, allowed: Self.fieldNames)
        tools = try NativeToolFields(f, results: true)
        // A turn of tool results alone needs no prompt.
        prompt = tools.results.isEmpty ? try f.requiredString("prompt") : try f.string("prompt") ?? ""
        stream = try f.bool("stream")
        options = try GenerationOptionsBody.read(f)
        onBusy = try f.choice("on_busy")
        onCancel = try f.choice("on_cancel")
        priority = try f.choice("priority")
        timeoutSeconds = try f.double("timeout_seconds")
    }
}

/// `POST /v1/sessions/{id}/cancel` (the body is optional).
package struct SessionCancelBody: Sendable {
    var requestId: String?

    package init(_ request: HTTPRequest) throws {
        requestId = try NativeFields.body(of: request, allowed: ["request_id"], optional: true).id("request_id")
    }
}

struct TranscriptEntryBody: Encodable, Sendable {
    var type: String
    var content: String
    var requestId: String?
    var status: String?
    var finishReason: String?
    var reason: String?
    /// A response's calls; a `tool_result`'s call; a response's reasoning.
    var toolCalls: [NativeToolCall]?
    var toolCallId: String?
    var reasoning: String?

    init(_ e: TranscriptEntry) {
        type = e.kind.rawValue
        content = e.content
        requestId = e.requestID
        status = e.status?.rawValue
        finishReason = e.finishReason
        reason = e.reason
        toolCalls = e.toolCalls.map { $0.map { NativeToolCall(id: $0.id, name: $0.name, arguments: $0.arguments) } }
        toolCallId = e.toolCallID
        reasoning = e.reasoning
    }

    enum CodingKeys: String, CodingKey {
        case type, content, status, reason, reasoning
        case requestId = "request_id"
        case finishReason = "finish_reason"
        case toolCalls = "tool_calls"
        case toolCallId = "tool_call_id"
    }
}

/// A session as `GET /v1/sessions/{id}` (and creation) shows it.
struct SessionBody: Encodable, Sendable {
    var id: String
    var object = "session"
    var created: Int
    /// `idle` or `responding`.
    var status: String
    var onBusy: String
    var activeRequestId: String?
    var queued: Int
    var transcript: [TranscriptEntryBody]?
    var contextTokens: Int?
    var contextLimit: Int?
    /// The client's pairs (`SessionMetadata`), `{}` when none.
    var metadata: [String: String]

    init(_ s: SessionSnapshot, metadata: [String: String], withTranscript: Bool = true) {
        id = s.id
        self.metadata = metadata
        created = s.created
        status = s.responding ? "responding" : "idle"
        onBusy = s.onBusy.rawValue
        activeRequestId = s.activeRequest
        queued = s.queued
        transcript = withTranscript ? s.entries.map(TranscriptEntryBody.init) : nil
        contextTokens = s.contextTokens
        contextLimit = s.contextLimit
    }

    enum CodingKeys: String, CodingKey {
        case id, object, created, status, queued, transcript, metadata
        case onBusy = "on_busy"
        case activeRequestId = "active_request_id"
        case contextTokens = "context_tokens"
        case contextLimit = "context_limit"
    }
}

/// A session turn's answer, and the payload of the `completed` and `cancelled` events.
struct SessionTurnBody: Encodable, Sendable {
    var id: String
    var requestId: String
    var object = "session.response"
    var sessionId: String
    /// `completed` or `cancelled` (failures travel as errors).
    var status: String
    var content: String
    var finishReason: String?
    var reason: String?
    /// The native usage shape (with `total_tokens`), zero for a turn that never started.
    var usage: UsageBody
    /// Structured (JSON) answers: the value, validated (`partial: false`) only when the answer
    /// ended where its grammar allows; else the last partial value (see `StructuredValue`).
    var value: JSONValue?
    var partial: Bool?
    /// Turns with tools: the reasoning and the complete calls (see `NativeToolAnswer`).
    var reasoning: String?
    var toolCalls: [NativeToolCall]?
    /// With `options.logprobs`: the answer's tokens' entries (markup of calls included).
    var logprobs: [LogprobEntryBody]?

    init(
        _ o: GenerationOutcome, requestID: String, sessionID: String, structured: Bool = false,
        tools: ToolAnswerTracker? = nil, logprobs: LogprobRecorder? = nil
    ) {
        self.logprobs = logprobs.map { LogprobEntryBody.answer($0, text: o.content) }
        id = requestID
        requestId = requestID
        sessionId = sessionID
        status = o.status.rawValue
        content = o.content
        finishReason = o.finishReason?.rawValue
        reason = o.reason?.rawValue
        usage = UsageBody(o.usage)
        if structured {
            (value, partial) = StructuredValue.final(content: o.content, satisfied: o.constraintSatisfied)
        }
        if let tools, o.status != .failed {
            let answer = NativeToolAnswer.final(o, tracker: tools)
            content = answer.content
            reasoning = answer.reasoning
            toolCalls = answer.toolCalls
            finishReason = answer.finishReason ?? finishReason
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, object, status, content, reason, usage, value, partial, reasoning, logprobs
        case requestId = "request_id"
        case sessionId = "session_id"
        case finishReason = "finish_reason"
        case toolCalls = "tool_calls"
    }
}

/// What a cancel endpoint did to one request.
struct CancellationBody: Encodable, Sendable {
    var object = "cancellation"
    var requestId: String
    var sessionId: String
    /// True when this call stopped or removed it; false when it had already ended.
    var cancelled: Bool
    /// `running`, `queued` or `finished`: where it was when the cancel arrived.
    var was: String
    /// How it ended, as the transcript holds it: `completed`, `cancelled` or `failed`.
    var status: String
    var reason: String?
    var content: String

    init(_ result: Session.CancelResult) {
        let o = result.outcome
        requestId = o.requestID
        sessionId = o.sessionID
        switch result {
        case .stopped: was = "running"
        case .removed: was = "queued"
        case .alreadyFinished: was = "finished"
        }
        cancelled = was != "finished" && o.status == .cancelled
        status = o.status.rawValue
        reason = o.reason?.rawValue
        content = o.content
    }

    enum CodingKeys: String, CodingKey {
        case object, cancelled, was, status, reason, content
        case requestId = "request_id"
        case sessionId = "session_id"
    }
}

struct SessionCancellationListBody: Encodable, Sendable {
    var object = "list"
    var sessionId: String
    var data: [CancellationBody]
    enum CodingKeys: String, CodingKey {
        case object, data
        case sessionId = "session_id"
    }
}

extension GenerationOptionsBody {
    /// These options over `base`: a field given here wins, an absent one falls back.
    func over(_ base: GenerationOptionsBody?) -> GenerationOptionsBody {
        guard let b = base else { return self }
        return GenerationOptionsBody(
            temperature: temperature ?? b.temperature, topK: topK ?? b.topK, topP: topP ?? b.topP,
            minP: minP ?? b.minP, repeatPenalty: repeatPenalty ?? b.repeatPenalty,
            repeatLastN: repeatLastN ?? b.repeatLastN, presencePenalty: presencePenalty ?? b.presencePenalty,
            frequencyPenalty: frequencyPenalty ?? b.frequencyPenalty, seed: seed ?? b.seed,
            maxTokens: maxTokens ?? b.maxTokens,
            stop: stop ?? b.stop, ignoreEos: ignoreEos ?? b.ignoreEos,
            // A session's defaults never hold a format (refused when it is created): the turn's own stands.
            format: format ?? b.format, logprobs: logprobs ?? b.logprobs, topLogprobs: topLogprobs ?? b.topLogprobs)
    }
}
