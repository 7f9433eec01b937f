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
    /// The `tool_call_format` setting (see `ChatToolCalling`).
    var toolCallFormat = ToolCallFormatSetting.auto

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
        let messages = [ChatMessage(role: .user, content: body.prompt)]
        var calling: ChatToolCalling?
        do {
            calling = try body.tools.use.flatMap { use throws(OpenAIError) in
                try ChatToolCalling.make(
                    backend, history: false, tools: use, hasFormat: body.options?.format != nil,
                    setting: toolCallFormat, names: .native)
            }
        } catch {
            throw HTTPError(error)
        }
        let prompt = try generations.prepare(
            backend,
            calling?.prompt.input(
                instructions: body.instructions, messages: messages, tools: body.tools.use, templateArguments: nil)
                ?? .conversation(instructions: body.instructions, messages: messages))
        do {
            // The grammar, once the prompt shows whether it opened the reasoning.
            calling = try ChatToolCalling.finish(calling, prompt: prompt, budget: nil, backend: backend, names: .native)
        } catch {
            throw HTTPError(error)
        }
        var generationRequest = try generations.makeRequest(
            prompt: prompt, options: body.options, backend: backend, for: request, cacheSalt: body.cacheSalt)
        if let constraint = calling?.constraint { generationRequest.constraint = constraint }
        let logprobs = try body.options?.logprobRecorder(backend: backend)
        generationRequest.logprobs = logprobs
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
        // Calls keep the ids their first snapshot gave them (`ToolAnswerTracker`).
        let tools = calling.map { ToolAnswerTracker(format: $0.format) }
        if body.stream == true {
            return .eventStream { [replicaId] stream in
                await stream.write(
                    generation, replica: replicaId, structured: structured, tools: tools, logprobs: logprobs
                ) { outcome in
                    GenerationBody(
                        outcome, id: id, model: model, reason: outcome.status == .cancelled ? outcome.reasonName : nil,
                        structured: structured, tools: tools, logprobs: logprobs)
                }
            }
        }
        let outcome = await generation.run()
        if outcome.status == .failed { throw outcome.error ?? .internalError() }
        return .json(
            GenerationBody(
                outcome, id: id, model: model, reason: outcome.reason?.rawValue, structured: structured, tools: tools,
                logprobs: logprobs))
    }
}
