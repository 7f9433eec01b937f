import Backend
import Cancellation
import Engine
import Foundation
import HTTPServer
import Sessions

/// What every surface that runs a turn in a session shares (the native session routes, OpenAI's
/// `session_id` extension, a response in a conversation): finding the session as a request may see
/// it, checking and admitting a turn under the same rules, and running it through the
/// `GenerationService`. The semantics live in the `Sessions` module; this maps them to requests.
struct SessionTurns: Sendable {
    let sessions: SessionManager
    let generations: GenerationService
    let access: AccessControl
    let host: ModelHost
    /// Turns a session keeps at most (`max_session_turns`).
    let maxTurns: Int
    /// Sessions per key, bytes per message and per transcript.
    let quota: TenantQuota
    /// The `tool_call_format` setting (see `ChatToolCalling`).
    var toolCallFormat = ToolCallFormatSetting.auto

    /// The session `id` as `request` may see it; a missing one is 404 `session_not_found`.
    /// Another key's session answers exactly as a missing one: its existence is not revealed.
    func require(id: String, _ request: HTTPRequest) async throws(HTTPError) -> Session {
        let found: Session?
        do {
            found = try await sessions.find(id)
        } catch {
            throw HTTPError(error)
        }
        guard let session = found, access.mayAccess(ownedBy: session.owner, request) else {
            throw HTTPError(SessionError.sessionNotFound(id))
        }
        return session
    }

    /// Checks and admits one turn: the session's options under the request's, its `on_busy` unless
    /// the request names one, the request's numbers against the server's limits (the context
    /// budget, which depends on the transcript, is checked when the turn runs). A full engine queue
    /// is 503 `server_busy` here, before any stream starts, and a key already holding its share of
    /// generations 429 `key_busy`; the turn is submitted to the engine only when the session's own
    /// queue reaches it, and counts against its key's share from then until it ends.
    func admit(
        to session: Session, id: String, prompt: String, onBusy: BusyPolicy?, onCancel: CancelPolicy?,
        admission: AdmissionFields, arrival: ContinuousClock.Instant, options: GenerationOptionsBody?,
        backend: any GenerationBackend, names: FieldNames = .native, tools: SessionToolTurn? = nil,
        logprobs: LogprobRecorder? = nil
    ) async throws(HTTPError) -> TurnRequest {
        let results = tools?.results ?? []
        guard !prompt.isEmpty || !results.isEmpty else {
            throw .badRequest(
                results.isEmpty && tools != nil
                    ? "prompt must not be empty (a turn gives a prompt, tool_results or both)"
                    : "prompt must not be empty",
                code: .invalidRequest, param: names.prompt)
        }
        if !prompt.isEmpty { try checkItem(prompt, field: names.prompt) }
        for (i, r) in results.enumerated() { try checkItem(r.content, field: "tool_results[\(i)].content") }
        try await checkTranscript(
            session, adding: results.reduce(prompt.utf8.count) { $0 + $1.content.utf8.count })
        let base = session.options.flatMap {
            try? JSONDecoder().decode(GenerationOptionsBody.self, from: Data($0.utf8))
        }
        let merged = (options ?? GenerationOptionsBody()).over(base)
        var parameters = try parameters(merged, names: names, constrainFor: backend)
        if let reader = tools?.reader { parameters.reader = reader }
        if let logprobs {
            parameters.logprobs = logprobs
        } else {
            parameters.logprobs = try merged.logprobRecorder(backend: backend)
        }
        if let constraint = tools?.constraint { parameters.constraint = constraint }
        let turnMessages = results + (prompt.isEmpty ? [] : [ChatMessage(role: .user, content: prompt)])
        let promptTokens = try generations.prepare(
            backend, parameters.reader?.input(turnMessages) ?? .conversation(instructions: nil, messages: turnMessages)
        ).tokenCount
        do {
            try generations.limits.check(
                promptTokens: promptTokens, requestedMaxTokens: merged.maxTokens,
                contextLength: backend.contextLength)
        } catch {
            throw HTTPError(error, names: names)
        }
        // Responses count turns: a turn of tool results alone has no prompt entry.
        let turns = await session.snapshot(backend: nil).entries.filter { $0.kind == .response }.count
        guard turns < maxTurns else {
            throw .conflict(
                "session \(session.id) holds \(turns) turns, the most this server keeps; start a new session",
                code: .sessionFull)
        }
        var turn = TurnRequest(
            id: id, prompt: prompt, onBusy: onBusy ?? session.onBusy, onCancel: onCancel ?? .keep,
            priority: admission.priority, parameters: parameters, deadline: admission.deadline(from: arrival))
        turn.toolResults = results
        do {
            try host.checkShare(of: session.owner ?? "")
            try backend.checkCapacity()
        } catch {
            throw generations.recordFailure(error, requestID: id)
        }
        // The backend itself, never the single-flight wrapper: a turn holding the session's KV
        // sequence is never shared.
        let sessionBackend = try host.requireSessionBackend()
        do {
            try await sessions.admit(turn, to: session, backend: sessionBackend)
        } catch {
            var e = HTTPError(error)
            if case .generation(.contextOverflow) = error { e.param = names.prompt }
            throw e
        }
        return turn
    }

    /// A turn's tools, checked before it is admitted: each result must answer a call of a
    /// response the model sees (else 400 naming it); with tools given, or tool turns in the
    /// transcript, the turn is prompted and read in the model's call format (`SessionToolReader`),
    /// and the tools' grammar constrains the answer. `hasFormat`: the turn asks for structured
    /// output (refused with tools). `splitsReasoning`: a thinking model's reasoning is kept apart
    /// even without tools (chat's `reasoning_content`).
    func toolTurn(
        _ tools: NativeToolFields, prompt: String, session: Session, backend: any GenerationBackend, hasFormat: Bool,
        names: ToolFieldNames = .native, splitsReasoning: Bool = false
    ) async throws(HTTPError) -> SessionToolTurn {
        let known = await session.visibleCallIDs()
        var answered = Set<String>()
        for (i, r) in tools.results.enumerated() {
            let id = r.toolCallID ?? ""
            let field = "\(NativeToolFields.resultsField)[\(i)].tool_call_id"
            guard known.contains(id) else {
                throw .badRequest(
                    "\(field) '\(id.prefix(80))' answers no call of this session's responses", code: .invalidValue,
                    param: field)
            }
            guard answered.insert(id).inserted else {
                throw .badRequest("\(field) '\(id)' is answered twice", code: .invalidValue, param: field)
            }
        }
        var calling: ChatToolCalling?
        do {
            calling = try ChatToolCalling.make(
                backend, history: !known.isEmpty || !tools.results.isEmpty, tools: tools.use, hasFormat: hasFormat,
                splitsReasoning: splitsReasoning, setting: toolCallFormat, names: names)
            if let made = calling {
                // The grammar depends on whether the generation prompt opens the reasoning, which
                // the template decides alike for any conversation: this turn's own messages show it.
                let messages = tools.results + (prompt.isEmpty ? [] : [ChatMessage(role: .user, content: prompt)])
                let probe = try generations.prepare(
                    backend,
                    made.prompt.input(instructions: nil, messages: messages, tools: tools.use, templateArguments: nil))
                calling = try ChatToolCalling.finish(made, prompt: probe, budget: nil, backend: backend, names: names)
            }
        } catch let error as OpenAIError {
            throw HTTPError(error)
        } catch let error as HTTPError {
            throw error
        } catch {
            throw HTTPError(status: 500, message: "\(error)", type: "server_error", code: .internalError)
        }
        return SessionToolTurn(
            results: tools.results,
            reader: calling.map {
                SessionToolReader(
                    prompt: $0.prompt, tools: tools.use, tracker: ToolAnswerTracker(format: $0.format, rules: $0.rules))
            }, constraint: calling?.constraint)
    }

    /// One message to be stored, within `max_item_bytes` (else 413 naming `field`).
    func checkItem(_ text: String, field: String) throws(HTTPError) {
        do {
            try quota.checkItem(text, field: field)
        } catch {
            throw HTTPError(error)
        }
    }

    /// The session's transcript may take `adding` more bytes (`max_transcript_bytes`), else 429
    /// `quota_exceeded`. Checked on admission: a turn's answer may pass it by its `max_tokens`.
    func checkTranscript(_ session: Session, adding: Int) async throws(HTTPError) {
        let bytes = await session.snapshot(backend: nil).entries.reduce(0) { $0 + $1.content.utf8.count }
        if let refusal = quota.admitTranscript(bytes: bytes, adding: adding) { throw HTTPError(refusal) }
    }

    /// Before a session (or conversation) of `owner` is created: 429 `session_limit` at
    /// `max_sessions_per_key`.
    func admitSession(owner: String?) async throws(HTTPError) {
        do {
            try await sessions.synchronize()
        } catch {
            throw HTTPError(error)
        }
        if let refusal = quota.admitSession(held: sessions.count(ownedBy: owner)) { throw HTTPError(refusal) }
    }

    /// A new session's instructions and default options, checked as every turn will carry them:
    /// the instructions within `max_item_bytes`, the context and `max_prompt_tokens` (400 naming
    /// `names.prompt`), the default `max_tokens` within `max_tokens_limit` and, after the
    /// instructions, the context (400 naming it). Without a model loaded yet, the token counts
    /// wait for the first turn.
    func checkDefaults(instructions: String?, maxTokens: Int?, names: FieldNames) throws(HTTPError) {
        if let instructions { try checkItem(instructions, field: names.prompt) }
        guard let backend = host.backend else { return }
        var tokens = 0
        if let instructions { tokens = try generations.prepare(backend, .text(instructions)).tokenCount }
        do {
            try generations.limits.checkDefaults(
                instructionTokens: tokens, maxTokens: maxTokens, contextLength: backend.contextLength)
        } catch {
            var e = HTTPError(error, names: names)
            if case .contextOverflow = error, tokens < backend.contextLength { e.param = names.maxTokensParam }
            throw e
        }
    }

    /// An admitted turn, to be run by the route (in its request's Task, or a Task the server owns
    /// for a background response) through the generation service.
    func generation(
        _ turn: TurnRequest, of session: Session, route: String, arrival: ContinuousClock.Instant,
        reason: @escaping @Sendable () -> CancellationReason
    ) -> AdmittedGeneration {
        generations.turn(turn.id, of: session, route: route, priority: turn.priority, arrival: arrival, reason: reason)
    }

    /// Why a turn stops when its request's Task is cancelled: the HTTP layer's reason (a client
    /// disconnect, a shutdown), else an explicit cancel request.
    static func cancelReason(_ context: RequestContext) -> @Sendable () -> CancellationReason {
        { context.cancellationReason ?? .cancelRequest }
    }

    /// Sampling, stop strings, max_tokens and the structured-output constraint, checked. `format`
    /// needs the backend it is compiled for; without one (a session's default options, kept as
    /// JSON whose keys are sorted) it is refused.
    func parameters(
        _ o: GenerationOptionsBody, names: FieldNames = .native, constrainFor backend: (any GenerationBackend)? = nil
    ) throws(HTTPError) -> TurnParameters {
        let (sampling, stop) = try o.validatedSamplingAndStop(names: names)
        var constraint: (any GenerationConstraint)?
        if let f = o.format {
            guard let backend else {
                throw .badRequest(
                    "\(f.param): a session's default options cannot hold a format; give it in each turn's options",
                    code: .unsupported, param: f.param)
            }
            constraint = try f.constraint(backend: backend)
        }
        do {
            try generations.limits.check(
                promptTokens: 0, requestedMaxTokens: o.maxTokens, contextLength: host.backend?.contextLength ?? Int.max)
        } catch {
            throw HTTPError(error, names: names)
        }
        return TurnParameters(
            maxTokens: o.maxTokens, sampling: sampling, stop: stop, ignoreEndOfGeneration: o.ignoreEos ?? false,
            constraint: constraint)
    }

    /// Admits an edit to the session's queue and runs it there; a client that leaves while it
    /// waits takes it out of the queue (nothing is applied).
    func edit(_ edit: TranscriptEdit, on session: Session, request: HTTPRequest) async throws -> TurnOutcome {
        let backend = try host.requireSessionBackend()
        let turn = TurnRequest.editing(edit, id: request.id, onBusy: session.onBusy)
        try await sessions.admit(turn, to: session, backend: backend)
        return await session.run(turn.id, observer: { _ in }, cancelReason: Self.cancelReason(request.context))
    }

    /// With a store shared by several servers, a turn running on another one cannot be stopped
    /// from here: 409 `running_on_another_server` says where to send the cancel.
    func refuseIfRunningElsewhere(_ session: Session, requestID: String?) async throws(HTTPError) {
        guard sessions.environment.store.isShared, await session.runsElsewhere(requestID) else { return }
        throw .conflict(
            "\(requestID.map { "request \($0)" } ?? "a turn of session \(session.id)") runs on another server; send the cancel to the server that runs it (route by session id)",
            code: .runningOnAnotherServer)
    }
}
