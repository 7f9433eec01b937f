import Backend
import Engine
import Foundation
import HTTPServer
import StructuredOutput

/// `POST /v1/generations`: an independent one-shot generation with an ephemeral sequence, answered
/// as JSON or as a native stream (`queued`, `started`, conflated `snapshot`s, then exactly one of
/// `completed`, `cancelled` or `error`).
struct GenerationRoutes: Sendable {
    let generations: GenerationService
    let host: ModelHost
    let replicaId: String

    func register(_ router: Router) {
        router.post("/v1/generations") { request in try await create(request) }
    }

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = generations.now
        let backend = try host.requireBackend()
        let body = try GenerationRequestBody(request)
        guard !body.prompt.isEmpty else {
            throw HTTPError.badRequest("prompt must not be empty", code: .invalidRequest, param: "prompt")
        }
        let admission = try AdmissionFields(priority: body.priority, timeoutSeconds: body.timeoutSeconds)
        let prompt = try generations.prepare(
            backend,
            .conversation(
                instructions: body.instructions, messages: [ChatMessage(role: .user, content: body.prompt)]))
        var generationRequest = try generations.makeRequest(
            prompt: prompt, options: body.options, backend: backend, for: request, cacheSalt: body.cacheSalt)
        generationRequest.priority = admission.priority
        generationRequest.deadline = admission.deadline(from: arrival)
        let structured = body.options?.format.map { $0.kind != .grammar } ?? false
        let context = request.context
        // Submitted before any stream starts, so a full queue is still a plain 503.
        let generation = try generations.admit(
            generationRequest, backend: backend, requestID: request.id, route: "generations", arrival: arrival,
            reason: { context.cancellationReason })
        let id = request.id
        let model = backend.modelName
        if body.stream == true {
            return .eventStream { [replicaId] stream in
                await stream.write(generation, replica: replicaId, structured: structured) { outcome in
                    GenerationBody(
                        outcome, id: id, model: model, reason: outcome.status == .cancelled ? outcome.reasonName : nil,
                        structured: structured)
                }
            }
        }
        let outcome = await generation.run()
        if outcome.status == .failed { throw outcome.error ?? .internalError() }
        return .json(
            GenerationBody(outcome, id: id, model: model, reason: outcome.reason?.rawValue, structured: structured))
    }
}
