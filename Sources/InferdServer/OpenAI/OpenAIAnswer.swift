import Engine
import Foundation
import HTTPServer
import Telemetry

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
    /// The choice's place among a text completion's choices (prompt index × n + its number).
    var index = 0
    /// Text with `echo`: the prompt's text, sent before the answer's.
    var echoText: String?

    init(
        kind: OpenAICompletionBody.Kind, id: String, model: String, includeUsage: Bool,
        tools: ToolAnswerTracker? = nil, logprobs: LogprobRecorder? = nil, created: Int? = nil
    ) {
        self.kind = kind
        self.id = id
        self.created = created ?? Int(Date().timeIntervalSince1970)
        self.model = model
        self.includeUsage = includeUsage
        self.tools = tools
        self.logprobs = logprobs
    }

    /// Runs the generation and answers once; a cancelled or failed one is an error.
    func json(_ generation: AdmittedGeneration) async throws(OpenAIError) -> HTTPResponse {
        let outcome = await generation.run()
        let choice = try choice(outcome)
        return .json(
            OpenAICompletionBody(
                kind: kind, id: id, created: created, model: model, choices: [choice], usage: OpenAIUsage(outcome.usage)
            ))
    }

    /// The choice a finished generation gives; a cancelled or failed one is an error.
    func choice(_ outcome: GenerationOutcome) throws(OpenAIError) -> OpenAICompletionChoice {
        if let error = Self.error(ending: outcome) { throw error }
        var choice = OpenAICompletionChoice(
            index: index, content: outcome.content, finishReason: outcome.wireFinishReason)
        choice.logprobs = logprobs.map { OpenAILogprobs.covering($0.all, text: outcome.content) }
        choice.echoText = echoText
        choice.promptLogprobs = echoText == nil ? nil : logprobs?.prompt
        if let tools {
            let message = tools.message(outcome.content, finishReason: outcome.wireFinishReason)
            if let error = tools.violation(message) { throw error }
            choice.content = message.content
            choice.reasoning = message.reasoning
            choice.toolCalls = message.calls
            choice.finishReason = message.finishReason
        }
        return choice
    }

    /// The SSE side, in OpenAI's convention: bare `data:` lines, a role chunk first (chat), then
    /// one chunk per new piece of text, then a chunk with `finish_reason`, the usage chunk when
    /// asked for, then `data: [DONE]`. Every chunk is sent with `send(data:)`, which never drops or
    /// reorders: deltas, unlike snapshots, cannot be conflated. A failure, a cancel, a shutdown or
    /// a `timeout_seconds` that passes while the request still waits ends the stream with an
    /// `error` object and no `[DONE]`; after a disconnect nothing more is written. Queue positions
    /// are not sent: OpenAI's clients know no such chunk.
    func stream(_ generation: AdmittedGeneration, to stream: EventStream) async {
        guard let outcome = await streamChoice(generation, to: stream) else { return }
        finishStream(usage: outcome.usage, to: stream)
    }

    /// The usage chunk when asked for, then `data: [DONE]`.
    func finishStream(usage: GenerationUsage, to stream: EventStream) {
        if includeUsage {
            var chunk = OpenAIStreamChunk(
                kind: kind, id: id, created: created, model: model, includeUsageField: includeUsage)
            chunk.hasChoice = false
            chunk.usage = OpenAIUsage(usage)
            stream.send(data: WireJSON.string(chunk))
        }
        stream.send(data: "[DONE]")
    }

    /// One choice's chunks, up to the one with its `finish_reason`; nil when it ended with an
    /// error chunk instead (the stream then ends there). Choices sharing a stream share `ended`:
    /// only the first error is written.
    func streamChoice(
        _ generation: AdmittedGeneration, to stream: EventStream, ended: Locked<Bool> = Locked(false)
    ) async -> GenerationOutcome? {
        var base = OpenAIStreamChunk(
            kind: kind, id: id, created: created, model: model, includeUsageField: includeUsage)
        base.index = index
        let template = base
        let tracker = OpenAIDeltaTracker()
        // With echo, the prompt's text (and its tokens' entries) in a chunk of its own, first.
        let echo = echoText.map { text in
            EchoOnce(text: text, template: template, recorder: logprobs, stream: stream)
        }
        // Each chunk carries the log-probabilities of the tokens written since the last chunk.
        let cursor = logprobs.map(LogprobCursor.init)
        if kind == .chat {
            var first = template
            first.role = "assistant"
            first.content = ""
            stream.send(data: WireJSON.string(first))
        }
        let outcome = await generation.run { event in
            // Once the prompt has run (its entries are written before `started`).
            if case .queued = event {} else { echo?.send() }
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
            chunk.logprobsOffset = offset + (echoText?.count ?? 0)
            stream.send(data: WireJSON.string(chunk))
        }
        if let error = Self.error(ending: outcome) {
            Self.sendError(error, to: stream, ended: ended)
            return nil
        }
        echo?.send()
        let echoed = echoText?.count ?? 0
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
                Self.sendError(error, to: stream, ended: ended)
                return nil
            }
            finish.finishReason = message.finishReason
        } else if let piece = tracker.delta(for: outcome.content) {
            // Text held back as a possible stop string is released with the result, not a snapshot.
            var chunk = template
            chunk.logprobsOffset = echoed + outcome.content.count - piece.count
            chunk.content = piece
            chunk.logprobs = rest
            stream.send(data: WireJSON.string(chunk))
        } else if let rest, !rest.isEmpty {
            // Tokens that added no text of their own (the end of a character came with the last).
            var chunk = template
            chunk.content = ""
            chunk.logprobs = rest
            chunk.logprobsOffset = echoed + outcome.content.count
            stream.send(data: WireJSON.string(chunk))
        }
        stream.send(data: WireJSON.string(finish))
        return outcome
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

    /// A stream's error chunk, unless another choice's already ended it.
    static func sendError(_ error: OpenAIError, to stream: EventStream, ended: Locked<Bool>) {
        let first = ended.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { stream.send(data: WireJSON.string(OpenAIStreamError(error: error))) }
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
