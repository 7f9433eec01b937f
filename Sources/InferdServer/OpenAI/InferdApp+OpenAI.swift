import Backend
import Engine
import Foundation
import HTTPServer

/// The OpenAI-compatible face of the server: `/v1/models`, `/v1/chat/completions` and
/// `/v1/completions`. Same engine, request Tasks, cancellation, validation and metrics as the
/// native API; only the wire format differs.
extension InferdApp {
    func addOpenAIRoutes(to router: Router) {
        router.get("/v1/models", openAI { [self] _ in try models() })
        router.get("/v1/models/{model}", openAI { [self] request in try model(request) })
        router.post("/v1/chat/completions", openAI { [self] request in try await chatCompletions(request) })
        router.post("/v1/completions", openAI { [self] request in try await completions(request) })
    }

    /// Runs an OpenAI handler, answering every error in OpenAI's shape.
    func openAI(_ handler: @escaping Handler) -> Handler {
        { request in
            do {
                return try await handler(request)
            } catch let e as OpenAIError {
                return e.response
            } catch let e as HTTPError {
                return OpenAIError(e).response
            }
        }
    }

    /// The names a request may use for the served model: its name, and the GGUF file's base name.
    func servedModelNames(_ backend: any GenerationBackend) -> Set<String> {
        backend.modelAliases
    }

    func checkModel(_ name: String, _ backend: any GenerationBackend) throws(OpenAIError) {
        guard servedModelNames(backend).contains(name) else { throw .modelNotFound(name, served: backend.modelName) }
    }

    func modelEntry(_ backend: any GenerationBackend) -> OpenAIModelList.Model {
        .init(
            id: backend.modelName, created: Int(startedAt.timeIntervalSince1970), contextLength: backend.contextLength,
            architecture: backend.architecture, weightTypes: backend.weightTypes)
    }

    func models() throws -> HTTPResponse {
        let backend = try requireBackend()
        return .json(OpenAIModelList(data: [modelEntry(backend)]))
    }

    func model(_ request: HTTPRequest) throws -> HTTPResponse {
        let backend = try requireBackend()
        let name = request.pathParameters["model"]?.removingPercentEncoding ?? ""
        try checkModel(name, backend)
        return .json(modelEntry(backend))
    }

    /// The body as a JSON object; malformed JSON is 400 `invalid_request_error` (code `invalid_json`).
    func openAIFields(_ request: HTTPRequest) throws -> OpenAIFields {
        do {
            return OpenAIFields(try OpenAIJSON.object(of: request))
        } catch let e as HTTPError where e.code == "invalid_value" {
            throw OpenAIError.invalid("the request body must be a JSON object", param: nil, code: "invalid_json")
        }
    }

    /// `POST /v1/chat/completions`.
    func chatCompletions(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = ContinuousClock.now
        let backend = try requireBackend()
        let chat = try OpenAIChatRequest(try openAIFields(request))
        try checkModel(chat.parameters.model, backend)
        if let sessionID = chat.sessionID {
            return try await sessionChatCompletion(
                chat, sessionID: sessionID, backend: backend, request: request, arrival: arrival)
        }
        let prompt = try preparePrompt(backend, .conversation(instructions: nil, messages: chat.messages))
        let generation = try openAIRequest(
            prompt: prompt, chat.parameters, backend: backend, requestID: request.id, promptParam: "messages",
            arrival: arrival, body: request.body)
        return try await answer(
            generation, kind: .chat, id: "chatcmpl-\(request.id)", chat.parameters, backend: backend, request: request,
            arrival: arrival)
    }

    /// `POST /v1/completions`: the prompt is raw text (control-token spellings are parsed, so a
    /// caller can write its own template) or token ids; no chat template is applied.
    func completions(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = ContinuousClock.now
        let backend = try requireBackend()
        let completion = try OpenAICompletionRequest(try openAIFields(request))
        try checkModel(completion.parameters.model, backend)
        let prompt: PreparedPrompt
        switch completion.prompt {
        case .text(let text):
            prompt = try preparePrompt(backend, .text(text))
        case .tokens(let ids):
            let vocabulary = backend.vocabularySize
            if let bad = ids.first(where: { Int($0) >= vocabulary }) {
                throw OpenAIError.invalid(
                    "prompt token id \(bad) is outside the vocabulary of \(vocabulary) tokens", param: "prompt")
            }
            prompt = try preparePrompt(backend, .tokens(ids))
        }
        guard prompt.tokenCount > 0 else { throw OpenAIError.invalid("prompt must not be empty", param: "prompt") }
        let generation = try openAIRequest(
            prompt: prompt, completion.parameters, backend: backend, requestID: request.id, promptParam: "prompt",
            arrival: arrival, body: request.body)
        return try await answer(
            generation, kind: .text, id: "cmpl-\(request.id)", completion.parameters, backend: backend,
            request: request, arrival: arrival)
    }

    /// The native validation (`makeRequest`), with its errors naming OpenAI's parameters.
    func openAIRequest(
        prompt: PreparedPrompt, _ p: OpenAIGenerationParameters, backend: any GenerationBackend, requestID: String,
        promptParam: String, arrival: ContinuousClock.Instant, body: [UInt8] = []
    ) throws -> BackendRequest {
        var generation: BackendRequest
        do {
            generation = try generations.makeRequest(
                prompt: prompt, options: p.options, backend: backend, label: requestID,
                names: .openAI(maxTokens: p.maxTokensParam, prompt: promptParam), body: body)
        } catch {
            throw OpenAIError(error)
        }
        generation.priority = p.admission.priority
        generation.deadline = p.admission.deadline(from: arrival)
        return generation
    }

    /// Streams, or generates and answers once.
    func answer(
        _ generation: BackendRequest, kind: OpenAICompletionBody.Kind, id: String,
        _ p: OpenAIGenerationParameters, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant
    ) async throws -> HTTPResponse {
        let route = kind == .chat ? "chat_completions" : "completions"
        let created = Int(Date().timeIntervalSince1970)
        let chunk = OpenAIStreamChunk(
            kind: kind, id: id, created: created, model: backend.modelName, includeUsageField: p.includeUsage)
        if p.stream {
            // Submitted before the stream starts, so a full queue is still a plain 503.
            let relay = GenerationEventRelay()
            let ticket = try generations.submitGeneration(
                generation, backend: backend, requestID: request.id, route: route, arrival: arrival,
                onEvent: relay.forward)
            return .eventStream { [self] stream in
                await streamOpenAI(ticket, events: relay, template: chunk, stream: stream)
            }
        }
        let result = try await generations.runGeneration(
            generation, backend: backend, requestID: request.id, route: route, arrival: arrival)
        if result.finishReason == .cancelled {
            let reason = request.context.cancellationReason?.rawValue ?? "cancelled"
            throw OpenAIError(
                status: 503, message: "the request was cancelled (\(reason)) before the answer was complete",
                type: "server_error", code: "cancelled")
        }
        return .json(
            OpenAICompletionBody(
                kind: kind, id: id, created: created, model: backend.modelName, content: result.content,
                finishReason: result.finishReason.rawValue, usage: OpenAIUsage(result.usage)))
    }
}
