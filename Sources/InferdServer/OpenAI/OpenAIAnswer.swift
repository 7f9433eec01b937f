import Engine
import Foundation
import HTTPServer

/// How a chat or text completion is answered once admitted, stateless or a session's turn alike:
/// one JSON body, or OpenAI's stream. One writer per wire format, so both paths send the same
/// chunks and end the same way.
struct OpenAIAnswer: Sendable {
    let kind: OpenAICompletionBody.Kind
    let id: String
    let created: Int
    let model: String
    let includeUsage: Bool
    /// Chat with tools: the answer is read by the model's call format.
    let tools: ToolAnswerTracker?
    /// Where the engine writes the tokens' log-probabilities, when they were asked for.
    let logprobs: LogprobRecorder?

    init(
        kind: OpenAICompletionBody.Kind, id: String, model: String, includeUsage: Bool,
        tools: ToolAnswerTracker? = nil, logprobs: LogprobRecorder? = nil
    ) {
        self.kind = kind
        self.id = id
        self.created = Int(Date().timeIntervalSince1970)
        self.model = model
        self.includeUsage = includeUsage
        self.tools = tools
        self.logprobs = logprobs
    }

    /// Runs the generation and answers once; a cancelled or failed one is an error.
    func json(_ generation: AdmittedGeneration) async throws(OpenAIError) -> HTTPResponse {
        let outcome = await generation.run()
        if let error = Self.error(ending: outcome) { throw error }
        var body = OpenAICompletionBody(
            kind: kind, id: id, created: created, model: model, content: outcome.content,
            finishReason: outcome.wireFinishReason, usage: OpenAIUsage(outcome.usage))
        body.logprobs = logprobs.map { OpenAILogprobs.covering($0.all, text: outcome.content) }
        if let tools {
            let message = tools.message(outcome.content, finishReason: outcome.wireFinishReason)
            if let error = tools.violation(message) { throw error }
            body.content = message.content
            body.reasoning = message.reasoning
            body.toolCalls = message.calls
            body.finishReason = message.finishReason
        }
        return .json(body)
    }

    /// The SSE side, in OpenAI's convention: bare `data:` lines, a role chunk first (chat), then
    /// one chunk per new piece of text, then a chunk with `finish_reason`, the usage chunk when
    /// asked for, then `data: [DONE]`. Every chunk is sent with `send(data:)`, which never drops or
    /// reorders: deltas, unlike snapshots, cannot be conflated. A failure, a cancel, a shutdown or
    /// a `timeout_seconds` that passes while the request still waits ends the stream with an
    /// `error` object and no `[DONE]`; after a disconnect nothing more is written. Queue positions
    /// are not sent: OpenAI's clients know no such chunk.
    func stream(_ generation: AdmittedGeneration, to stream: EventStream) async {
        let template = OpenAIStreamChunk(
            kind: kind, id: id, created: created, model: model, includeUsageField: includeUsage)
        let tracker = OpenAIDeltaTracker()
        // Each chunk carries the log-probabilities of the tokens written since the last chunk.
        let cursor = logprobs.map(LogprobCursor.init)
        if kind == .chat {
            var first = template
            first.role = "assistant"
            first.content = ""
            stream.send(data: WireJSON.string(first))
        }
        let outcome = await generation.run { event in
            guard case .snapshot(let content, let n) = event else { return }
            if let tools {
                send(tools.update(content, final: false), template, to: stream, logprobs: cursor, upTo: n)
                return
            }
            let offset = tracker.text.count
            guard let piece = tracker.delta(for: content) else { return }
            var chunk = template
            chunk.content = piece
            chunk.logprobs = cursor?.take(upTo: n)
            chunk.logprobsOffset = offset
            stream.send(data: WireJSON.string(chunk))
        }
        if let error = Self.error(ending: outcome) {
            stream.send(data: WireJSON.string(OpenAIStreamError(error: error)))
            return
        }
        var finish = template
        finish.finishReason = outcome.wireFinishReason
        // The entries no chunk carried yet, up to the end of the answer (a stop string's are not).
        let rest = cursor?.rest(covering: outcome.content)
        if let tools {
            // The rest (held back as possible markup or a stop string), then the calls' verdict.
            let final = ToolAnswerTracker.isFinal(outcome.wireFinishReason)
            var delta = tools.update(outcome.content, final: final)
            if let rest, !rest.isEmpty, delta.isEmpty { delta.content = "" }
            send(delta, template, to: stream, entries: rest)
            let message = tools.message(outcome.content, finishReason: outcome.wireFinishReason)
            if let error = tools.violation(message) {
                stream.send(data: WireJSON.string(OpenAIStreamError(error: error)))
                return
            }
            finish.finishReason = message.finishReason
        } else if let piece = tracker.delta(for: outcome.content) {
            // Text held back as a possible stop string is released with the result, not a snapshot.
            var chunk = template
            chunk.logprobsOffset = outcome.content.count - piece.count
            chunk.content = piece
            chunk.logprobs = rest
            stream.send(data: WireJSON.string(chunk))
        } else if let rest, !rest.isEmpty {
            // Tokens that added no text of their own (the end of a character came with the last).
            var chunk = template
            chunk.content = ""
            chunk.logprobs = rest
            chunk.logprobsOffset = outcome.content.count
            stream.send(data: WireJSON.string(chunk))
        }
        stream.send(data: WireJSON.string(finish))
        if includeUsage {
            var usage = template
            usage.hasChoice = false
            usage.usage = OpenAIUsage(outcome.usage)
            stream.send(data: WireJSON.string(usage))
        }
        stream.send(data: "[DONE]")
    }

    /// One chunk for what a snapshot added with tools: text, reasoning and call fragments, and
    /// the log-probabilities of the tokens up to `upTo` (those of a snapshot that adds nothing
    /// shown go with the next chunk).
    func send(
        _ delta: ToolAnswerTracker.Delta, _ template: OpenAIStreamChunk, to stream: EventStream,
        logprobs cursor: LogprobCursor?, upTo count: Int
    ) {
        guard !delta.isEmpty else { return }
        send(delta, template, to: stream, entries: cursor?.take(upTo: count))
    }

    func send(
        _ delta: ToolAnswerTracker.Delta, _ template: OpenAIStreamChunk, to stream: EventStream,
        entries: [TokenLogprob]?
    ) {
        guard !delta.isEmpty else { return }
        var chunk = template
        chunk.content = delta.content
        chunk.reasoning = delta.reasoning
        chunk.toolCalls = delta.calls
        chunk.logprobs = entries
        stream.send(data: WireJSON.string(chunk))
    }

    /// The error a generation that did not complete answers with; nil when it completed.
    static func error(ending outcome: GenerationOutcome) -> OpenAIError? {
        switch outcome.status {
        case .completed:
            return nil
        case .cancelled:
            return OpenAIError(
                status: 503,
                message: "the request was cancelled (\(outcome.reasonName)) before the answer was complete",
                type: "server_error", code: .cancelled)
        case .failed:
            return OpenAIError(outcome.error ?? .internalError())
        }
    }
}
