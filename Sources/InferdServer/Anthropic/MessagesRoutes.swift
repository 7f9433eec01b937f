import Backend
import Engine
import Foundation
import HTTPServer
import Sessions

/// Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) on the same
/// machinery as every other route: the generation service, request Tasks cancelled on
/// disconnect, the shared tool grammars, sessions (inferd's `session_id` extension). Only the
/// wire format is Anthropic's (docs/messages.md).
struct MessagesRoutes: Sendable {
    let generations: GenerationService
    let turns: SessionTurns
    let host: ModelHost
    let toolCallFormat: ToolCallFormatSetting

    static let paths: Set<String> = ["/v1/messages", "/v1/messages/count_tokens"]

    func register(_ router: Router) {
        router.post("/v1/messages", Self.anthropic { request in try await create(request) })
        router.post("/v1/messages/count_tokens", Self.anthropic { request in try await countTokens(request) })
    }

    /// Runs a Messages handler, answering every error in Anthropic's shape.
    static func anthropic(_ handler: @escaping Handler) -> Handler {
        { request in
            do {
                return try await handler(request)
            } catch let e as AnthropicError {
                return e.response
            } catch let e as OpenAIError {
                return AnthropicError(Self.renamed(e)).response
            } catch let e as HTTPError {
                return AnthropicError(Self.renamed(OpenAIError(e))).response
            }
        }
    }

    /// Field names from the shared paths in this API's spelling: `tools[0].parameters` is
    /// `tools.0.input_schema`, the stop list is `stop_sequences`.
    static func renamed(_ e: OpenAIError) -> OpenAIError {
        guard var param = e.param else { return e }
        param = param.replacingOccurrences(of: "[", with: ".").replacingOccurrences(of: "]", with: "")
        if param.hasPrefix("tools."), param.hasSuffix(".parameters") {
            param = String(param.dropLast("parameters".count)) + "input_schema"
        }
        if param == "stop" || param.hasPrefix("stop.") { param = "stop_sequences" + param.dropFirst("stop".count) }
        if param == "reasoning_budget" { param = "thinking.budget_tokens" }
        var out = e
        out.param = param
        return out
    }

    static func fields(_ request: HTTPRequest) throws(AnthropicError) -> OpenAIFields {
        do {
            return try OpenAIJSON.fields(of: request)
        } catch {
            throw AnthropicError.invalid("the request body must be a JSON object", field: nil)
        }
    }

    /// `POST /v1/messages`.
    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = generations.now
        let backend = try host.requireBackend()
        let body = try MessagesRequest(try Self.fields(request))
        try OpenAIRoutes.checkModel(body.model, backend)
        let id = "msg_" + request.id
        let generation: AdmittedGeneration
        let tools: ToolAnswerTracker?
        var promptTokens = 0
        if let sessionID = body.sessionID {
            (generation, tools) = try await sessionTurn(
                body, sessionID: sessionID, backend: backend, request: request, arrival: arrival)
        } else {
            let (prompt, calling) = try prepare(body, backend: backend)
            promptTokens = prompt.tokenCount
            tools = calling.map { ToolAnswerTracker(format: $0.format, rules: $0.rules) }
            generation = try admit(prompt, body, backend: backend, request: request, arrival: arrival, calling: calling)
        }
        let answer = MessagesAnswer(id: id, model: backend.modelName, tools: tools, promptTokens: promptTokens)
        guard body.stream else { return try await answer.json(generation) }
        return .eventStream { stream in await answer.stream(generation, to: stream) }
    }

    /// `POST /v1/messages/count_tokens`: the prompt the same body would be given, counted.
    func countTokens(_ request: HTTPRequest) async throws -> HTTPResponse {
        let backend = try host.requireBackend()
        let body = try MessagesRequest(try Self.fields(request), count: true)
        try OpenAIRoutes.checkModel(body.model, backend)
        let (prompt, _) = try prepare(body, backend: backend)
        struct Count: Encodable {
            var inputTokens: Int
            enum CodingKeys: String, CodingKey { case inputTokens = "input_tokens" }
        }
        return .json(Count(inputTokens: prompt.tokenCount))
    }

    /// The conversation rendered by the chat template (with the tools' prompt and the call
    /// format when there are tools or tool turns, or when the template thinks), and the tool
    /// calling that reads and constrains the answer.
    func prepare(_ body: MessagesRequest, backend: any GenerationBackend) throws(OpenAIError)
        -> (PreparedPrompt, ChatToolCalling?)
    {
        if body.thinking != nil, !ChatToolCalling.thinks(backend.chatTemplateSource, arguments: nil) {
            if case .enabled = body.thinking {
                throw .unsupported("thinking: this model's chat template has no thinking mode", param: "thinking")
            }
        }
        var calling = try ChatToolCalling.make(
            backend, messages: body.messages, tools: body.tools, hasFormat: body.options.format != nil,
            templateArguments: body.templateArguments, splitsReasoning: true, setting: toolCallFormat,
            names: .messages)
        let input =
            calling?.prompt.input(
                instructions: nil, messages: body.messages, tools: body.tools, templateArguments: body.templateArguments
            )
            ?? .conversation(
                instructions: nil, messages: body.messages, extras: TemplateExtras(arguments: body.templateArguments))
        let prompt: PreparedPrompt
        do {
            prompt = try generations.prepare(backend, input)
        } catch {
            throw OpenAIError(error, param: error.param ?? "messages")
        }
        calling = try ChatToolCalling.finish(
            calling, prompt: prompt, budget: body.reasoningBudget, backend: backend, names: .messages)
        return (prompt, calling)
    }

    func admit(
        _ prompt: PreparedPrompt, _ body: MessagesRequest, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant, calling: ChatToolCalling?
    ) throws(OpenAIError) -> AdmittedGeneration {
        do {
            var generation = try generations.makeRequest(
                prompt: prompt, options: body.options, backend: backend, for: request, cacheSalt: nil,
                names: .openAI(maxTokens: "max_tokens", prompt: "messages"))
            if let constraint = calling?.constraint { generation.constraint = constraint }
            let context = request.context
            return try generations.admit(
                generation, backend: backend, requestID: request.id, route: "messages", arrival: arrival,
                reason: { context.cancellationReason })
        } catch {
            throw OpenAIError(error)
        }
    }

    /// The `session_id` extension: what follows the last assistant message (tool results, then
    /// the last user message) is a new turn of that session; earlier messages are ignored, the
    /// transcript is the history. As chat completions' `session_id`.
    func sessionTurn(
        _ body: MessagesRequest, sessionID: String, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant
    ) async throws(OpenAIError) -> (AdmittedGeneration, ToolAnswerTracker?) {
        let session: Session
        do {
            session = try await turns.require(id: sessionID, request)
        } catch {
            throw OpenAIError(error, param: "session_id")
        }
        let start = (body.messages.lastIndex { $0.role == .assistant }).map { $0 + 1 } ?? 0
        let tail = body.messages[start...]
        let results = tail.filter { $0.role == .tool }
        let prompt = tail.last { $0.role == .user }?.content ?? ""
        guard !prompt.isEmpty || !results.isEmpty else {
            throw .invalid("messages: with session_id, the last user message must not be empty", param: "messages")
        }
        do {
            let toolTurn = try await turns.toolTurn(
                NativeToolFields(use: body.tools, results: Array(results)), prompt: prompt, session: session,
                backend: backend, hasFormat: body.options.format != nil, names: .messages, splitsReasoning: true)
            let turn = try await turns.admit(
                to: session, id: request.id, prompt: prompt, onBusy: body.onBusy, onCancel: nil,
                admission: try AdmissionFields(priority: nil, timeoutSeconds: nil), arrival: arrival,
                options: body.options, backend: backend, names: .openAI(maxTokens: "max_tokens", prompt: "messages"),
                tools: toolTurn)
            let generation = turns.generation(
                turn, of: session, route: "messages", arrival: arrival,
                reason: SessionTurns.cancelReason(request.context))
            return (generation, toolTurn.tracker)
        } catch {
            var e = OpenAIError(error)
            switch error.code {
            case .sessionBusy, .sessionQueueFull: e.param = body.onBusy == nil ? "session_id" : "on_busy"
            case .sessionNotFound: e.param = "session_id"
            default: break
            }
            throw e
        }
    }
}

extension ToolFieldNames {
    /// The Messages API: tools carry their schema in `input_schema` (renamed on the way out).
    static let messages = ToolFieldNames(messages: "messages", format: "output_config.format", flat: true)
}
