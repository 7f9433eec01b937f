import Backend
import Engine
import Foundation
import HTTPServer
import Sessions

/// The OpenAI-compatible face of the server: `/v1/models`, `/v1/chat/completions` (with inferd's
/// `session_id` extension) and `/v1/completions`. Same generation service, request Tasks,
/// cancellation, validation and metrics as the native API; only the wire format differs.
struct OpenAIRoutes: Sendable {
    let generations: GenerationService
    let turns: SessionTurns
    let host: ModelHost
    let startedAt: Date
    /// How tool calls are written: the `tool_call_format` setting.
    let toolCallFormat: ToolCallFormatSetting

    func register(_ router: Router) {
        router.get("/v1/models", Self.openAI { _ in try models() })
        router.get("/v1/models/{model}", Self.openAI { request in try model(request) })
        router.post("/v1/chat/completions", Self.openAI { request in try await chatCompletions(request) })
        router.post("/v1/completions", Self.openAI { request in try await completions(request) })
    }

    /// Runs an OpenAI handler, answering every error in OpenAI's shape.
    static func openAI(_ handler: @escaping Handler) -> Handler {
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
    static func checkModel(_ name: String, _ backend: any GenerationBackend) throws(OpenAIError) {
        guard backend.modelAliases.contains(name) else { throw .modelNotFound(name, served: backend.modelName) }
    }

    /// The body as a JSON object; malformed JSON is 400 `invalid_request_error` (code `invalid_json`).
    static func fields(_ request: HTTPRequest) throws -> OpenAIFields {
        do {
            return try OpenAIJSON.fields(of: request)
        } catch let e as HTTPError where e.code == .invalidValue {
            throw OpenAIError.invalid("the request body must be a JSON object", param: nil, code: .invalidJSON)
        }
    }

    func modelEntry(_ backend: any GenerationBackend) -> OpenAIModelList.Model {
        .init(
            id: backend.modelName, created: Int(startedAt.timeIntervalSince1970), contextLength: backend.contextLength,
            architecture: backend.architecture, weightTypes: backend.weightTypes)
    }

    func models() throws -> HTTPResponse {
        .json(OpenAIModelList(data: [modelEntry(try host.requireBackend())]))
    }

    func model(_ request: HTTPRequest) throws -> HTTPResponse {
        let backend = try host.requireBackend()
        try Self.checkModel(request.pathParameters["model"]?.removingPercentEncoding ?? "", backend)
        return .json(modelEntry(backend))
    }

    /// `POST /v1/chat/completions`.
    func chatCompletions(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = generations.now
        let backend = try host.requireBackend()
        let chat = try OpenAIChatRequest(try Self.fields(request))
        try Self.checkModel(chat.parameters.model, backend)
        let generation: AdmittedGeneration
        let tools: ToolAnswerTracker?
        let logprobs = try Self.recorder(chat.parameters, backend: backend)
        if let sessionID = chat.sessionID {
            // The session's transcript decides how its turn is prompted and read.
            (generation, tools) = try await sessionTurn(
                chat, sessionID: sessionID, backend: backend, request: request, arrival: arrival, logprobs: logprobs)
        } else {
            var toolUse = try ChatToolCalling.make(backend, for: chat, setting: toolCallFormat)
            let input =
                toolUse?.prompt.input(
                    instructions: nil, messages: chat.messages, tools: chat.tools,
                    templateArguments: chat.templateArguments)
                ?? .conversation(
                    instructions: nil, messages: chat.messages,
                    extras: TemplateExtras(arguments: chat.templateArguments))
            let prompt = try generations.prepare(backend, input)
            toolUse = try ChatToolCalling.finish(
                toolUse, prompt: prompt, budget: chat.reasoningBudget, backend: backend, names: .chat)
            tools = toolUse.map { ToolAnswerTracker(format: $0.format, rules: $0.rules) }
            generation = try admit(
                prompt: prompt, chat.parameters, route: "chat_completions", promptParam: "messages", backend: backend,
                request: request, arrival: arrival, constraint: toolUse?.constraint, logprobs: logprobs)
        }
        let answer = OpenAIAnswer(
            kind: .chat, id: "chatcmpl-\(request.id)", model: backend.modelName,
            includeUsage: chat.parameters.includeUsage, tools: tools, logprobs: logprobs)
        return try await respond(generation, answer, stream: chat.parameters.stream)
    }

    /// The native validation (`makeRequest`), with its errors naming OpenAI's parameters, then
    /// the submission (before any stream starts, so a full queue is still a plain 503).
    func admit(
        prompt: PreparedPrompt, _ p: OpenAIGenerationParameters, route: String, promptParam: String,
        backend: any GenerationBackend, request: HTTPRequest, arrival: ContinuousClock.Instant,
        constraint: (any GenerationConstraint)? = nil, logprobs: LogprobRecorder? = nil
    ) throws(OpenAIError) -> AdmittedGeneration {
        do {
            var generation = try generations.makeRequest(
                prompt: prompt, options: p.options, backend: backend, for: request, cacheSalt: p.cacheSalt,
                names: .openAI(maxTokens: p.maxTokensParam, prompt: promptParam))
            if let constraint { generation.constraint = constraint }
            generation.logprobs = logprobs
            // `max_tokens: 0` with echo: validated as 1 (the native rules know no 0), run as 0.
            if p.scoresOnly { generation.maxTokens = 0 }
            generation.priority = p.admission.priority
            generation.deadline = p.admission.deadline(from: arrival)
            let context = request.context
            return try generations.admit(
                generation, backend: backend, requestID: request.id, route: route, arrival: arrival,
                reason: { context.cancellationReason })
        } catch {
            throw OpenAIError(error)
        }
    }

    /// Where the engine writes the log-probabilities asked for; a backend that computes none (a
    /// remote engine) refuses them, naming the field, rather than answer without them.
    static func recorder(
        _ p: OpenAIGenerationParameters, backend: any GenerationBackend, scoresPrompt: Bool = false
    ) throws(OpenAIError) -> LogprobRecorder? {
        guard let ask = p.logprobs else { return nil }
        guard backend.computesLogprobs else {
            throw .unsupported("logprobs: this server's backend does not compute log-probabilities", param: "logprobs")
        }
        return ask.recorder(scoresPrompt: scoresPrompt)
    }

    /// The `session_id` extension: the request's last user message becomes a new turn of a
    /// server-side session. Admission, the `on_busy` policy, the KV cache, the transcript and
    /// cancellation are the native session endpoint's (`SessionTurns`); only the answer is in
    /// OpenAI's shape. Earlier messages of the request are ignored: the transcript is the history.
    func sessionTurn(
        _ chat: OpenAIChatRequest, sessionID: String, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant, logprobs: LogprobRecorder? = nil
    ) async throws(OpenAIError) -> (AdmittedGeneration, ToolAnswerTracker?) {
        let session: Session
        do {
            session = try await turns.require(id: sessionID, request)
        } catch {
            throw OpenAIError(
                status: error.status, message: error.message, type: "invalid_request_error", param: "session_id",
                code: error.code)
        }
        let (given, results) = chat.sessionTurnInput
        guard let prompt = given else {
            throw .invalid("with session_id, messages must contain a user message", param: "messages")
        }
        guard !prompt.isEmpty || !results.isEmpty else {
            throw .invalid("with session_id, the last user message must not be empty", param: "messages")
        }
        let toolTurn: SessionToolTurn
        let turn: TurnRequest
        do {
            toolTurn = try await turns.toolTurn(
                NativeToolFields(use: chat.tools, results: results.map(\.message)), prompt: prompt, session: session,
                backend: backend, hasFormat: chat.parameters.options.format != nil, names: .chat, splitsReasoning: true)
            turn = try await turns.admit(
                to: session, id: request.id, prompt: prompt, onBusy: chat.onBusy, onCancel: nil,
                admission: chat.parameters.admission, arrival: arrival, options: chat.parameters.options,
                backend: backend, names: .openAI(maxTokens: chat.parameters.maxTokensParam, prompt: "messages"),
                tools: toolTurn, logprobs: logprobs)
        } catch {
            var e = OpenAIError(error)
            // A result's field as the caller wrote it: `messages[i].…`.
            e.renameResult(
                in: "messages", indexes: results.map(\.index), idField: "tool_call_id", textField: "content")
            switch error.code {
            case .sessionBusy, .sessionQueueFull: e.param = chat.onBusy == nil ? "session_id" : "on_busy"
            case .sessionNotFound: e.param = "session_id"
            default: break
            }
            throw e
        }
        let generation = turns.generation(
            turn, of: session, route: "chat_completions", arrival: arrival,
            reason: SessionTurns.cancelReason(request.context))
        return (generation, toolTurn.tracker)
    }

    func respond(_ generation: AdmittedGeneration, _ answer: OpenAIAnswer, stream: Bool) async throws -> HTTPResponse {
        guard stream else { return try await answer.json(generation) }
        return .eventStream { stream in await answer.stream(generation, to: stream) }
    }
}
