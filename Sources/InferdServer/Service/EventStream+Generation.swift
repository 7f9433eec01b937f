import Engine
import HTTPServer
import StructuredOutput

/// A generation's running events and its error, in the one wire shape every native and session
/// stream uses: the SSE name is the event's `GenerationEventName`, the payload a sorted-key JSON
/// object that names the request. The terminal `completed`/`cancelled` bodies are each surface's
/// own (a response, a turn).
extension EventStream {
    /// `queued` and `started` are sent as they come; snapshots are conflated for a slow reader
    /// (a newer one replaces an unsent one, which loses nothing: each holds the whole answer).
    /// `started` names the replica that runs the request; a `structured` answer's snapshots carry
    /// the JSON value so far, closed so that it parses (`partial: true`); an answer with `tools`
    /// its text, reasoning and calls so far (`NativeToolAnswer`). With `logprobs`, each snapshot
    /// holds every token's entry so far, as it holds the whole text: a conflated one loses none.
    func send(
        _ event: GenerationEvent, replica: String, structured: Bool = false, tools: ToolAnswerTracker? = nil,
        logprobs: LogprobRecorder? = nil
    ) {
        let id = requestID
        switch event {
        case .queued(let position):
            send(.queued, QueuedEvent(requestId: id, position: position))
        case .started(let p, let c):
            send(.started, StartedEvent(requestId: id, promptTokens: p, cachedTokens: c, replicaId: replica))
        case .snapshot(let content, let n) where tools != nil:
            let answer = NativeToolAnswer.snapshot(content, tracker: tools!)
            sendSnapshot(
                event: GenerationEventName.snapshot.rawValue,
                data: WireJSON.string(
                    SnapshotEvent(
                        requestId: id, content: answer.content, completionTokens: n, reasoning: answer.reasoning,
                        toolCalls: answer.toolCalls,
                        logprobs: logprobs.map { $0.entries(0..<n).map(LogprobEntryBody.init) })))
        case .snapshot(let content, let n):
            sendSnapshot(
                event: GenerationEventName.snapshot.rawValue,
                data: WireJSON.string(
                    SnapshotEvent(
                        requestId: id, content: content, completionTokens: n,
                        value: structured ? PartialJSON.value(content) : nil, partial: structured ? true : nil,
                        logprobs: logprobs.map { $0.entries(0..<n).map(LogprobEntryBody.init) })))
        }
    }

    /// A whole generation on the native wire (`/v1/generations` and session turns alike): its
    /// events as they come, then exactly one of `completed` or `cancelled` with the surface's own
    /// `final` body, or `error` (`timeout` when it waited past its `timeout_seconds`).
    func write(
        _ generation: AdmittedGeneration, replica: String, structured: Bool, tools: ToolAnswerTracker? = nil,
        logprobs: LogprobRecorder? = nil, final: (GenerationOutcome) -> any Encodable
    ) async {
        let outcome = await generation.run { [self] event in
            send(event, replica: replica, structured: structured, tools: tools, logprobs: logprobs)
        }
        switch outcome.status {
        case .completed: send(.completed, final(outcome))
        case .cancelled: send(.cancelled, final(outcome))
        case .failed: sendError(outcome.error ?? .internalError())
        }
    }

    /// The `error` event: the stream ends without a result.
    func sendError(_ error: HTTPError) {
        send(
            .error,
            ErrorEvent(
                requestId: requestID, error: .init(message: error.message, type: error.type, code: error.code.rawValue))
        )
    }

    /// One event by its name, with its payload in the wire encoding.
    func send<T: Encodable>(_ name: GenerationEventName, _ payload: T) {
        send(event: name.rawValue, data: WireJSON.string(payload))
    }
}

struct QueuedEvent: Encodable, Sendable {
    var requestId: String
    var position: Int
    enum CodingKeys: String, CodingKey {
        case requestId = "request_id"
        case position
    }
}

struct StartedEvent: Codable, Sendable {
    var requestId: String
    var promptTokens: Int?
    var cachedTokens: Int?
    var replicaId: String
    enum CodingKeys: String, CodingKey {
        case requestId = "request_id"
        case promptTokens = "prompt_tokens"
        case cachedTokens = "cached_tokens"
        case replicaId = "replica_id"
    }
}

struct SnapshotEvent: Codable, Sendable {
    var requestId: String
    var content: String
    var completionTokens: Int
    /// Structured (JSON) answers: the value so far, closed (always `partial`).
    var value: JSONValue? = nil
    var partial: Bool? = nil
    /// Answers with tools: the reasoning and calls so far (`NativeToolAnswer`).
    var reasoning: String? = nil
    var toolCalls: [NativeToolCall]? = nil
    /// With `options.logprobs`: every token's entry so far.
    var logprobs: [LogprobEntryBody]? = nil
    enum CodingKeys: String, CodingKey {
        case requestId = "request_id"
        case content, value, partial, reasoning, logprobs
        case completionTokens = "completion_tokens"
        case toolCalls = "tool_calls"
    }
}

struct ErrorEvent: Encodable, Sendable {
    struct Detail: Encodable, Sendable {
        var message: String
        var type: String
        var code: String
    }
    var requestId: String
    var error: Detail
    enum CodingKeys: String, CodingKey {
        case requestId = "request_id"
        case error
    }
}
