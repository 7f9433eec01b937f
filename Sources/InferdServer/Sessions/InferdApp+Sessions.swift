import Backend
import Cancellation
import Engine
import Foundation
import HTTPServer
import Sessions
import Telemetry

/// The session API: stateful conversations with one request at a time per session, snapshot
/// streaming, cancel-then-await, kept KV caches and durable transcripts (see docs/sessions.md).
/// The semantics live in the `Sessions` module; this file only maps them to HTTP and JSON.
extension InferdApp {
    static func makeSessions(
        configuration c: ServerConfiguration, store: any SessionStore, logger: Logger, metrics: Metrics
    ) -> SessionManager {
        let environment = SessionEnvironment(
            store: store, caches: KVCacheBudget(budgetBytes: c.kvCacheMiB << 20), maxQueue: c.maxSessionQueue,
            defaultMaxTokens: c.defaultMaxTokens, logger: logger, metrics: metrics)
        // A fresh in-memory store holds nothing to load, so this cannot fail.
        return try! SessionManager(environment: environment)
    }

    /// Opens the session store (`store_url`'s PostgreSQL, else `data_dir`'s SQLite) and restores
    /// every session; a bad or unreachable database is an error here.
    public static func openSessions(
        configuration c: ServerConfiguration, logger: Logger, metrics: Metrics
    ) throws(StoreError) -> SessionManager {
        let store = try openStore(c)
        let environment = SessionEnvironment(
            store: store, caches: KVCacheBudget(budgetBytes: c.kvCacheMiB << 20), maxQueue: c.maxSessionQueue,
            defaultMaxTokens: c.defaultMaxTokens, logger: logger, metrics: metrics)
        let manager = try SessionManager(environment: environment)
        logger.info(
            "sessions restored",
            ["count": "\(manager.count)", "interrupted": "\(store.interruptedOnOpen)", "store": storeName(c)])
        return manager
    }

    static func openStore(_ c: ServerConfiguration) throws(StoreError) -> any SessionStore {
        guard !c.storeURL.isEmpty else { return try TranscriptStore.open(dataDir: c.dataDir) }
        return try PostgresSessionStore.open(url: c.storeURL, password: try storePassword(c))
    }

    /// The PostgreSQL password from `store_password_file`, if set (else the URL's or `PGPASSWORD`).
    static func storePassword(_ c: ServerConfiguration) throws(StoreError) -> String? {
        guard !c.storePasswordFile.isEmpty else { return nil }
        do {
            return try String(contentsOfFile: c.storePasswordFile, encoding: .utf8).trimmingCharacters(in: .newlines)
        } catch {
            throw StoreError("cannot read store_password_file \(c.storePasswordFile): \(error.localizedDescription)")
        }
    }

    /// Where sessions live, as logs may show it (never a password).
    static func storeName(_ c: ServerConfiguration) -> String {
        c.storeURL.isEmpty ? "sqlite:\(c.dataDir)" : PostgresSessionStore.redact(c.storeURL)
    }

    /// A store failure as an HTTP error: unreachable is 503 `store_unavailable` (retry later).
    static func httpError(for error: StoreError) -> HTTPError {
        error.unavailable
            ? HTTPError(
                status: 503, message: "the session store is unavailable: \(error)", type: "server_error",
                code: "store_unavailable")
            : HTTPError(status: 500, message: "\(error)", type: "server_error", code: "storage_error")
    }

    func registerSessionRoutes(_ router: Router) {
        router.post("/v1/sessions") { [self] request in try await createSession(request) }
        router.get("/v1/sessions") { [self] request in try await listSessions(request) }
        router.get("/v1/sessions/{id}") { [self] request in try await getSession(request) }
        router.delete("/v1/sessions/{id}") { [self] request in try await deleteSession(request) }
        router.post("/v1/sessions/{id}/responses") { [self] request in try await sessionRespond(request) }
        router.post("/v1/sessions/{id}/cancel") { [self] request in try await cancelInSession(request) }
        router.post("/v1/requests/{request_id}/cancel") { [self] request in try await cancelRequest(request) }
    }

    func createSession(_ request: HTTPRequest) async throws -> HTTPResponse {
        let body = try CreateSessionBody(request)
        let onBusy = body.onBusy ?? .queue
        if let o = body.options { _ = try turnParameters(o) }
        let options = body.options.map { Self.json($0) }
        let owner = owner(of: request)
        do {
            try await sessions.synchronize()
        } catch {
            throw Self.httpError(for: error)
        }
        guard sessions.count(ownedBy: owner) < configuration.maxSessionsPerKey else {
            throw HTTPError.tooManyRequests(
                "this API key already has \(configuration.maxSessionsPerKey) sessions, the most allowed; delete one first",
                code: "session_limit")
        }
        let session: Session
        do {
            session = try await sessions.create(
                instructions: body.instructions, onBusy: onBusy, options: options, owner: owner)
        } catch {
            throw Self.httpError(for: error)
        }
        return .json(SessionBody(await session.snapshot(backend: host.backend)), status: 201)
    }

    /// One page of the caller's sessions (of every session when authentication is off), oldest
    /// first unless `order=desc`; see `ListQuery`.
    func listSessions(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = try ListQuery(request.query)
        do {
            try await sessions.synchronize()
        } catch {
            throw Self.httpError(for: error)
        }
        let visible = sessions.all.filter { mayAccess(ownedBy: $0.owner, request) }
        let page = try query.page(of: visible, id: \.id)
        var data: [SessionBody] = []
        for s in page.items { data.append(SessionBody(await s.snapshot(backend: nil), withTranscript: false)) }
        return .json(ListPage(data: data, hasMore: page.hasMore, id: \.id))
    }

    func getSession(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await requireSession(request)
        return .json(SessionBody(await session.snapshot(backend: host.backend)))
    }

    func deleteSession(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try await requireSession(request).id
        do {
            guard try await sessions.delete(id) else { throw Self.httpError(for: SessionError.sessionNotFound(id)) }
        } catch let error as StoreError {
            throw Self.httpError(for: error)
        }
        return HTTPResponse(status: 204)
    }

    func sessionRespond(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = ContinuousClock.now
        let backend = try requireBackend()
        let session = try await requireSession(request)
        let body = try SessionTurnRequestBody(request)
        let admission = try AdmissionFields(priority: body.priority, timeoutSeconds: body.timeoutSeconds)
        let turn = try await admitSessionTurn(
            to: session, id: request.id, prompt: body.prompt, onBusy: body.onBusy, onCancel: body.onCancel,
            admission: admission, arrival: arrival, options: body.options, backend: backend, body: request.body)
        // A JSON answer's snapshots carry its value so far, as the stateless route's do.
        let structured = body.options?.format.map { $0.kind != .grammar } ?? false
        let reason = sessionCancelReason(request.context)
        let latency = generations.latency(route: "sessions", priority: admission.priority, arrival: arrival)
        if body.stream == true {
            return .eventStream { [replicaId] stream in
                let outcome = await session.run(
                    turn.id,
                    observer: { event in
                        latency.observe(event)
                        stream.send(event, replica: replicaId, structured: structured)
                    }
                ) { reason() }
                latency.finish(promptMilliseconds: outcome.timings?.promptMilliseconds)
                switch outcome.status {
                case .completed: stream.send(.completed, SessionTurnBody(outcome, structured: structured))
                case .cancelled: stream.send(.cancelled, SessionTurnBody(outcome, structured: structured))
                case .failed:
                    stream.sendError(Self.httpError(for: outcome.error ?? .generation(.computeFailed("unknown"))))
                }
            }
        }
        let outcome = await session.run(turn.id, observer: latency.observe, cancelReason: reason)
        latency.finish(promptMilliseconds: outcome.timings?.promptMilliseconds)
        if outcome.status == .failed {
            throw Self.httpError(for: outcome.error ?? .generation(.computeFailed("unknown")))
        }
        return .json(SessionTurnBody(outcome, structured: structured))
    }

    /// Checks and admits one turn to a session: the native session endpoint and the OpenAI
    /// `session_id` extension share it, so both follow the same rules (the session's options
    /// under the request's, its `on_busy` unless the request names one, its context budget).
    /// A full engine queue is 503 `server_busy` here, before any stream starts; the turn is
    /// submitted to the engine only when the session's own queue reaches it.
    func admitSessionTurn(
        to session: Session, id: String, prompt: String, onBusy: BusyPolicy?, onCancel: CancelPolicy?,
        admission: AdmissionFields, arrival: ContinuousClock.Instant, options: GenerationOptionsBody?,
        backend: any GenerationBackend, names: FieldNames = .native, body: [UInt8] = []
    ) async throws -> TurnRequest {
        guard !prompt.isEmpty else {
            throw HTTPError.badRequest("prompt must not be empty", code: "invalid_request", param: names.prompt)
        }
        let promptTokens = try preparePrompt(
            backend, .conversation(instructions: nil, messages: [ChatMessage(role: .user, content: prompt)])
        ).tokenCount
        // Beyond the context, the session's own check answers (context_length_exceeded) first.
        guard promptTokens <= configuration.maxPromptTokens || promptTokens > backend.contextLength else {
            throw HTTPError.badRequest(
                "the prompt is \(promptTokens) tokens; this server accepts at most \(configuration.maxPromptTokens)",
                code: "prompt_too_long", param: names.prompt)
        }
        let turns = await session.snapshot(backend: nil).entries.filter { $0.kind == .prompt }.count
        guard turns < configuration.maxSessionTurns else {
            throw HTTPError.conflict(
                "session \(session.id) holds \(turns) turns, the most this server keeps; start a new session",
                code: "session_full")
        }
        let base = session.options.flatMap {
            try? JSONDecoder().decode(GenerationOptionsBody.self, from: Data($0.utf8))
        }
        let turn = TurnRequest(
            id: id, prompt: prompt,
            onBusy: onBusy ?? session.onBusy, onCancel: onCancel ?? .keep,
            priority: admission.priority,
            parameters: try turnParameters(
                (options ?? GenerationOptionsBody()).over(base), names: names, constrainFor: backend, body: body),
            deadline: admission.deadline(from: arrival))
        do {
            try backend.checkCapacity()
        } catch {
            throw generations.recordFailure(error, requestID: id)
        }
        do {
            try await sessions.admit(turn, to: session, backend: backend)
        } catch {
            var e = Self.httpError(for: error)
            if case .generation(.contextOverflow) = error { e.param = names.prompt }
            throw e
        }
        return turn
    }

    /// Why a turn stops when its request's Task is cancelled: the HTTP layer's reason (a client
    /// disconnect, a shutdown), else an explicit cancel request.
    func sessionCancelReason(_ context: RequestContext) -> @Sendable () -> CancellationReason {
        { context.cancellationReason ?? .cancelRequest }
    }

    func cancelInSession(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await requireSession(request)
        let body = try SessionCancelBody(request)
        try await refuseIfRunningElsewhere(session, requestID: body.requestId)
        if let rid = body.requestId {
            guard let result = await session.cancel(requestID: rid, reason: .cancelRequest) else {
                throw Self.httpError(for: SessionError.requestNotFound(rid))
            }
            return .json(CancellationBody(result))
        }
        let results = await session.cancelAll(reason: .cancelRequest)
        return .json(SessionCancellationListBody(sessionId: session.id, data: results.map(CancellationBody.init)))
    }

    func cancelRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
        let rid = request.pathParameters["request_id"] ?? ""
        let found: Session?
        do {
            found = try await sessions.find(forRequest: rid)
        } catch {
            throw Self.httpError(for: error)
        }
        guard let session = found, mayAccess(ownedBy: session.owner, request) else {
            throw Self.httpError(for: SessionError.requestNotFound(rid))
        }
        try await refuseIfRunningElsewhere(session, requestID: rid)
        guard let result = await session.cancel(requestID: rid, reason: .cancelRequest) else {
            throw Self.httpError(for: SessionError.requestNotFound(rid))
        }
        return .json(CancellationBody(result))
    }

    /// With a store shared by several servers, a turn running on another one cannot be stopped
    /// from here: 409 `running_on_another_server` says where to send the cancel.
    func refuseIfRunningElsewhere(_ session: Session, requestID: String?) async throws {
        guard sessions.environment.store.isShared, await session.runsElsewhere(requestID) else { return }
        throw HTTPError.conflict(
            "\(requestID.map { "request \($0)" } ?? "a turn of session \(session.id)") runs on another server; send the cancel to the server that runs it (route by session id)",
            code: "running_on_another_server")
    }

    func requireSession(_ request: HTTPRequest) async throws -> Session {
        try await requireSession(id: request.pathParameters["id"] ?? "", request)
    }

    /// The session `id` as `request` may see it; a missing one is 404 `session_not_found`.
    /// Another key's session answers exactly as a missing one: its existence is not revealed.
    func requireSession(id: String, _ request: HTTPRequest) async throws -> Session {
        let found: Session?
        do {
            found = try await sessions.find(id)
        } catch {
            throw Self.httpError(for: error)
        }
        guard let session = found, mayAccess(ownedBy: session.owner, request) else {
            throw Self.httpError(for: SessionError.sessionNotFound(id))
        }
        return session
    }

    /// Sampling, stop strings, max_tokens and the structured-output constraint, checked; the
    /// context budget is the session's to check. `format` needs the backend it is compiled for
    /// and the raw body (its schema is re-read there in its key order); without a backend (a
    /// session's default options, kept as JSON whose keys are sorted) it is refused.
    func turnParameters(
        _ o: GenerationOptionsBody, names: FieldNames = .native, constrainFor backend: (any GenerationBackend)? = nil,
        body: [UInt8] = []
    ) throws(HTTPError) -> TurnParameters {
        let (sampling, stop) = try o.validatedSamplingAndStop(names: names)
        var constraint: (any GenerationConstraint)?
        if let f = o.format {
            guard let backend else {
                throw .badRequest(
                    "\(f.param): a session's default options cannot hold a format; give it in each turn's options",
                    code: "unsupported", param: f.param)
            }
            constraint = try f.constraint(backend: backend, body: body)
        }
        if let m = o.maxTokens, m < 1 {
            throw .badRequest(
                "\(names.maxTokens) must be at least 1", code: "invalid_option", param: names.maxTokensParam)
        }
        // Beyond the context, the session's own check answers (context_length_exceeded) first.
        if let m = o.maxTokens, m > configuration.maxTokensLimit, m <= (host.backend?.contextLength ?? Int.max) {
            throw .badRequest(
                "\(names.maxTokens) is \(m); this server allows at most \(configuration.maxTokensLimit)",
                code: "max_tokens_too_large", param: names.maxTokensParam)
        }
        return TurnParameters(
            maxTokens: o.maxTokens, sampling: sampling, stop: stop, ignoreEndOfGeneration: o.ignoreEos ?? false,
            constraint: constraint)
    }

    /// A policy named on the wire, as its enum: an unknown name is a 400 naming the field.
    static func choice<T: RawRepresentable & CaseIterable>(
        _ raw: String, _ name: String, as: T.Type
    ) throws(HTTPError) -> T
    where T.RawValue == String {
        guard let value = T(rawValue: raw) else {
            let allowed = T.allCases.map(\.rawValue).joined(separator: ", ")
            throw HTTPError.badRequest(
                "\(name) must be one of \(allowed), got \"\(raw)\"", code: "invalid_request", param: name)
        }
        return value
    }

    static func httpError(for error: SessionError) -> HTTPError {
        switch error {
        case .sessionNotFound(let id): .notFound("no session \(id)", code: "session_not_found")
        case .requestNotFound(let id): .notFound("no request \(id)", code: "request_not_found")
        case .busy: .conflict("\(error)", code: "session_busy")
        case .queueFull: .tooManyRequests("\(error)", code: "session_queue_full")
        case .duplicateRequest: .conflict("\(error)", code: "duplicate_request")
        case .entryNotFound: .notFound("\(error)", code: "entry_not_found")
        case .generation(let e): GenerationService.httpError(for: e)
        case .storage: HTTPError(status: 500, message: "\(error)", type: "server_error", code: "storage_error")
        case .storeUnavailable:
            HTTPError(status: 503, message: "\(error)", type: "server_error", code: "store_unavailable")
        case .chatTemplate(let e): httpError(for: e)
        }
    }
}
