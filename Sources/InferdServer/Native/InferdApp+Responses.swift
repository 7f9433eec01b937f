import Backend
import Engine
import Foundation
import HTTPServer
import StructuredOutput
import Telemetry

extension InferdApp {
    /// `POST /v1/responses`: an independent one-shot generation with an ephemeral sequence.
    func respond(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = ContinuousClock.now
        let backend = try requireBackend()
        let body = try ResponseRequestBody(request)
        guard !body.prompt.isEmpty else {
            throw HTTPError.badRequest("prompt must not be empty", code: "invalid_request", param: "prompt")
        }
        let admission = try AdmissionFields(priority: body.priority, timeoutSeconds: body.timeoutSeconds)
        let prompt = try chatPromptTokens(
            backend,
            .conversation(
                instructions: body.instructions, messages: [ChatMessage(role: .user, content: body.prompt)]))
        var generation = try generations.makeGenerationRequest(
            prompt: prompt, options: body.options, backend: backend, label: request.id, body: request.body)
        generation.priority = admission.priority
        generation.deadline = admission.deadline(from: arrival)
        let structured = body.options?.format.map { $0.kind != .grammar } ?? false
        if body.stream == true {
            // Submitted before the stream starts, so a full queue is still a plain 503.
            let relay = GenerationEventRelay()
            let ticket = try generations.submitGeneration(
                generation, backend: backend, requestID: request.id, onEvent: relay.forward)
            return .eventStream { [self] stream in
                await streamResponse(ticket, events: relay, backend: backend, stream: stream, structured: structured)
            }
        }
        let result = try await generations.runGeneration(generation, backend: backend, requestID: request.id)
        let reason = result.finishReason == .cancelled ? request.context.cancellationReason?.rawValue : nil
        return .json(responseBody(result, id: request.id, backend: backend, reason: reason, structured: structured))
    }

    func responseBody(
        _ result: GenerationResult, id: String, backend: any GenerationBackend, reason: String?,
        structured: Bool = false
    ) -> ResponseBody {
        var body = ResponseBody(
            id: id, created: Int(Date().timeIntervalSince1970), model: backend.modelName,
            status: result.finishReason == .cancelled ? "cancelled" : "completed", content: result.content,
            finishReason: result.finishReason.rawValue, usage: UsageBody(result.usage),
            timings: TimingsBody(result.timings), reason: reason)
        if structured {
            let value = StructuredValue.final(result)
            body.value = value.value
            body.partial = value.partial
        }
        return body
    }

    /// The SSE side of `/v1/responses`: `queued` while it waits for a place in the engine,
    /// `started`, `snapshot`s (conflated for slow readers), then exactly one of `completed`,
    /// `cancelled` or `error` (`timeout` when it waited past its `timeout_seconds`).
    func streamResponse(
        _ ticket: PendingGeneration, events: GenerationEventRelay, backend: any GenerationBackend, stream: EventStream,
        structured: Bool = false
    ) async {
        let id = stream.requestID
        events.attach { event in
            switch event {
            case .queued(let position):
                stream.send(event: "queued", data: Self.json(QueuedEvent(requestId: id, position: position)))
            case .promptProcessed(let p, let c):
                stream.send(
                    event: "started", data: Self.json(StartedEvent(requestId: id, promptTokens: p, cachedTokens: c)))
            case .snapshot(let content, let n):
                stream.sendSnapshot(
                    event: "snapshot",
                    data: Self.json(
                        SnapshotEvent(
                            requestId: id, content: content, completionTokens: n,
                            value: structured ? PartialJSON.value(content) : nil, partial: structured ? true : nil)))
            }
        }
        let result: GenerationResult
        do {
            result = try await generations.awaitGeneration(ticket, requestID: id)
        } catch {
            stream.send(
                event: "error",
                data: Self.json(
                    ErrorEvent(
                        requestId: id, error: .init(message: error.message, type: error.type, code: error.code))))
            return
        }
        if result.finishReason == .cancelled {
            let reason = stream.context.cancellationReason?.rawValue ?? "cancelled"
            stream.send(
                event: "cancelled",
                data: Self.json(responseBody(result, id: id, backend: backend, reason: reason, structured: structured)))
        } else {
            stream.send(
                event: "completed",
                data: Self.json(responseBody(result, id: id, backend: backend, reason: nil, structured: structured)))
        }
    }

    /// An SSE payload or stored value, in the one wire encoding (sorted keys).
    package static func json<T: Encodable>(_ value: T) -> String { WireJSON.string(value) }
}
