import Backend
import Engine
import Foundation
import HTTPServer
import StructuredOutput
import Telemetry

extension InferdApp {
    /// `POST /v1/generations`: an independent one-shot generation with an ephemeral sequence.
    func createGeneration(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = ContinuousClock.now
        let backend = try requireBackend()
        let body = try GenerationRequestBody(request)
        guard !body.prompt.isEmpty else {
            throw HTTPError.badRequest("prompt must not be empty", code: "invalid_request", param: "prompt")
        }
        let admission = try AdmissionFields(priority: body.priority, timeoutSeconds: body.timeoutSeconds)
        let prompt = try preparePrompt(
            backend,
            .conversation(
                instructions: body.instructions, messages: [ChatMessage(role: .user, content: body.prompt)]))
        var generation = try generations.makeRequest(
            prompt: prompt, options: body.options, backend: backend, label: request.id, body: request.body)
        generation.priority = admission.priority
        generation.deadline = admission.deadline(from: arrival)
        let structured = body.options?.format.map { $0.kind != .grammar } ?? false
        if body.stream == true {
            // Submitted before the stream starts, so a full queue is still a plain 503.
            let relay = GenerationEventRelay()
            let ticket = try generations.submitGeneration(
                generation, backend: backend, requestID: request.id, route: "generations", arrival: arrival,
                onEvent: relay.forward)
            return .eventStream { [self] stream in
                await streamGeneration(ticket, events: relay, backend: backend, stream: stream, structured: structured)
            }
        }
        let result = try await generations.runGeneration(
            generation, backend: backend, requestID: request.id, route: "generations", arrival: arrival)
        let reason = result.finishReason == .cancelled ? request.context.cancellationReason?.rawValue : nil
        return .json(generationBody(result, id: request.id, backend: backend, reason: reason, structured: structured))
    }

    func generationBody(
        _ result: GenerationResult, id: String, backend: any GenerationBackend, reason: String?,
        structured: Bool = false
    ) -> GenerationBody {
        var body = GenerationBody(
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

    /// The SSE side of `/v1/generations`: `queued` while it waits for a place in the engine,
    /// `started`, `snapshot`s (conflated for slow readers), then exactly one of `completed`,
    /// `cancelled` or `error` (`timeout` when it waited past its `timeout_seconds`).
    func streamGeneration(
        _ ticket: PendingGeneration, events: GenerationEventRelay, backend: any GenerationBackend, stream: EventStream,
        structured: Bool = false
    ) async {
        events.attach { [replicaId] event in stream.send(event, replica: replicaId, structured: structured) }
        let result: GenerationResult
        do {
            result = try await generations.awaitGeneration(ticket, requestID: stream.requestID)
        } catch {
            stream.sendError(error)
            return
        }
        let reason =
            result.finishReason == .cancelled ? stream.context.cancellationReason?.rawValue ?? "cancelled" : nil
        stream.send(
            result.finishReason.terminalEvent,
            generationBody(result, id: stream.requestID, backend: backend, reason: reason, structured: structured))
    }

    /// An SSE payload or stored value, in the one wire encoding (sorted keys).
    package static func json<T: Encodable>(_ value: T) -> String { WireJSON.string(value) }
}
