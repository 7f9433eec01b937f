import Backend
import Cancellation
import Engine
import Foundation
import HTTPServer
import Sessions

/// The `session_id` extension of `POST /v1/chat/completions`: the request's last user message
/// becomes a new turn of a server-side session. Admission, the `on_busy` policy, the KV cache,
/// the transcript and cancellation are the native session endpoint's (`admitSessionTurn`,
/// `Session.run`); only the answer is in OpenAI's shape. Earlier messages of the request are
/// ignored: the session's transcript is the history.
extension InferdApp {
    func sessionChatCompletion(
        _ chat: OpenAIChatRequest, sessionID: String, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant
    ) async throws -> HTTPResponse {
        let session: Session
        do {
            session = try await requireSession(id: sessionID, request)
        } catch let e as HTTPError {
            throw OpenAIError(
                status: e.status, message: e.message, type: "invalid_request_error", param: "session_id", code: e.code)
        }
        guard let prompt = chat.lastUserMessage else {
            throw OpenAIError.invalid("with session_id, messages must contain a user message", param: "messages")
        }
        guard !prompt.isEmpty else {
            throw OpenAIError.invalid("with session_id, the last user message must not be empty", param: "messages")
        }
        let turn: TurnRequest
        do {
            turn = try await admitSessionTurn(
                to: session, id: request.id, prompt: prompt, onBusy: chat.onBusy, onCancel: nil,
                admission: chat.parameters.admission, arrival: arrival, options: chat.parameters.options,
                backend: backend, names: .openAI(maxTokens: chat.parameters.maxTokensParam, prompt: "messages"),
                body: request.body)
        } catch let e as HTTPError {
            var error = OpenAIError(e)
            switch e.code {
            case "session_busy", "session_queue_full": error.param = chat.onBusy == nil ? "session_id" : "on_busy"
            case "session_not_found": error.param = "session_id"
            default: break
            }
            throw error
        }
        let reason = sessionCancelReason(request.context)
        let created = Int(Date().timeIntervalSince1970)
        let template = OpenAIStreamChunk(
            kind: .chat, id: "chatcmpl-\(request.id)", created: created, model: backend.modelName,
            includeUsageField: chat.parameters.includeUsage)
        let latency = generations.latency(
            route: "chat_completions", priority: chat.parameters.admission.priority, arrival: arrival)
        if chat.parameters.stream {
            return .eventStream { stream in
                await Self.streamSessionTurn(
                    session, turn.id, template: template, stream: stream, latency: latency, reason: reason)
            }
        }
        let outcome = await session.run(turn.id, observer: latency.observe, cancelReason: reason)
        latency.finish(promptMilliseconds: outcome.timings?.promptMilliseconds)
        if let error = Self.openAIError(ending: outcome) { throw error }
        return .json(
            OpenAICompletionBody(
                kind: .chat, id: template.id, created: created, model: backend.modelName, content: outcome.content,
                finishReason: (outcome.finishReason ?? .stop).rawValue, usage: OpenAIUsage(turn: outcome.usage)))
    }

    /// The turn's snapshots as OpenAI deltas, as `streamOpenAI` sends a stateless generation's.
    static func streamSessionTurn(
        _ session: Session, _ id: String, template: OpenAIStreamChunk, stream: EventStream, latency: RequestLatency,
        reason: @escaping @Sendable () -> CancellationReason
    ) async {
        let tracker = OpenAIDeltaTracker()
        var first = template
        first.role = "assistant"
        first.content = ""
        stream.send(data: json(first))
        let outcome = await session.run(
            id,
            observer: { event in
                latency.observe(event)
                guard case .snapshot(let content, _) = event, let piece = tracker.delta(for: content) else { return }
                var chunk = template
                chunk.content = piece
                stream.send(data: json(chunk))
            }, cancelReason: reason)
        latency.finish(promptMilliseconds: outcome.timings?.promptMilliseconds)
        if let error = openAIError(ending: outcome) {
            stream.send(data: json(OpenAIStreamError(error: error)))
            return
        }
        if let rest = tracker.delta(for: outcome.content) {
            var chunk = template
            chunk.content = rest
            stream.send(data: json(chunk))
        }
        var finish = template
        finish.finishReason = (outcome.finishReason ?? .stop).rawValue
        stream.send(data: json(finish))
        if template.includeUsageField {
            var usage = template
            usage.hasChoice = false
            usage.usage = OpenAIUsage(turn: outcome.usage)
            stream.send(data: json(usage))
        }
        stream.send(data: "[DONE]")
    }

    /// The error a turn that did not complete answers with; nil when it completed.
    static func openAIError(ending outcome: TurnOutcome) -> OpenAIError? {
        switch outcome.status {
        case .completed:
            return nil
        case .cancelled:
            let reason = outcome.reason?.rawValue ?? "cancelled"
            return OpenAIError(
                status: 503, message: "the request was cancelled (\(reason)) before the answer was complete",
                type: "server_error", code: "cancelled")
        case .failed:
            return OpenAIError(httpError(for: outcome.error ?? .generation(.computeFailed("unknown"))))
        }
    }
}
