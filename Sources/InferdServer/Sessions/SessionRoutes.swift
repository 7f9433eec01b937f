import Backend
import Cancellation
import Engine
import Foundation
import HTTPServer
import Sessions

/// The native session API: stateful conversations with one request at a time per session, snapshot
/// streaming, cancel-then-await, kept KV caches and durable transcripts (see docs/sessions.md).
/// The semantics live in the `Sessions` module and `SessionTurns`; this maps them to HTTP and JSON.
struct SessionRoutes: Sendable {
    let turns: SessionTurns
    let access: AccessControl
    let host: ModelHost
    let replicaId: String
    let metadata: SessionMetadata

    var sessions: SessionManager { turns.sessions }

    func register(_ router: Router) {
        router.post("/v1/sessions") { request in try await create(request) }
        router.get("/v1/sessions") { request in try await list(request) }
        router.get("/v1/sessions/{id}") { request in try await get(request) }
        router.post("/v1/sessions/{id}") { request in try await update(request) }
        router.delete("/v1/sessions/{id}") { request in try await delete(request) }
        router.post("/v1/sessions/{id}/responses") { request in try await respond(request) }
        router.post("/v1/sessions/{id}/cancel") { request in try await cancelInSession(request) }
        router.post("/v1/requests/{request_id}/cancel") { request in try await cancelRequest(request) }
    }

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let body = try CreateSessionBody(request)
        let onBusy = body.onBusy ?? .queue
        if let o = body.options { _ = try turns.parameters(o) }
        try turns.checkDefaults(
            instructions: body.instructions, maxTokens: body.options?.maxTokens,
            names: FieldNames(optionsPrefix: "options.", maxTokens: "max_tokens", prompt: "instructions"))
        let options = body.options.map { WireJSON.string($0) }
        let owner = access.owner(of: request)
        try await turns.admitSession(owner: owner)
        let session: Session
        do {
            session = try await sessions.create(
                instructions: body.instructions, onBusy: onBusy, options: options, owner: owner)
        } catch {
            throw HTTPError(error)
        }
        let pairs = body.metadata ?? [:]
        if !pairs.isEmpty { try await metadata.save(pairs, for: session.id) }
        return .json(SessionBody(await session.snapshot(backend: host.backend), metadata: pairs), status: 201)
    }

    /// One page of the caller's sessions (of every session when authentication is off), oldest
    /// first unless `order=desc`; see `ListQuery`.
    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = try ListQuery(request.query)
        do {
            try await sessions.synchronize()
        } catch {
            throw HTTPError(error)
        }
        let visible = sessions.all.filter { access.mayAccess(ownedBy: $0.owner, request) }
        let page = try query.page(of: visible, id: \.id)
        var data: [SessionBody] = []
        for s in page.items {
            data.append(
                SessionBody(await s.snapshot(backend: nil), metadata: await metadata.read(s.id), withTranscript: false))
        }
        return .json(ListPage(data: data, hasMore: page.hasMore, id: \.id))
    }

    func get(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await requireSession(request)
        return .json(
            SessionBody(await session.snapshot(backend: host.backend), metadata: await metadata.read(session.id)))
    }

    /// `POST /v1/sessions/{id}` `{"metadata"}`: replaces the session's metadata (the chat page's
    /// rename); the session as `GET` shows it.
    func update(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await requireSession(request)
        let body = try UpdateSessionBody(request)
        try await metadata.save(body.metadata, for: session.id)
        return .json(SessionBody(await session.snapshot(backend: host.backend), metadata: body.metadata))
    }

    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = try await requireSession(request).id
        do {
            guard try await sessions.delete(id) else { throw HTTPError(SessionError.sessionNotFound(id)) }
            await metadata.delete(id)
        } catch let error as StoreError {
            throw HTTPError(error)
        }
        return HTTPResponse(status: 204)
    }

    /// `POST /v1/sessions/{id}/responses`: one turn, answered as JSON or as a native stream.
    func respond(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = turns.generations.now
        let backend = try host.requireSessionBackend()
        let session = try await requireSession(request)
        let body = try SessionTurnRequestBody(request)
        let admission = try AdmissionFields(priority: body.priority, timeoutSeconds: body.timeoutSeconds)
        let toolTurn = try await turns.toolTurn(
            body.tools, prompt: body.prompt, session: session, backend: backend, hasFormat: body.options?.format != nil)
        let turn = try await turns.admit(
            to: session, id: request.id, prompt: body.prompt, onBusy: body.onBusy, onCancel: body.onCancel,
            admission: admission, arrival: arrival, options: body.options, backend: backend, tools: toolTurn)
        let tools = toolTurn.tracker
        // A JSON answer's snapshots carry its value so far, as the stateless route's do.
        let structured = body.options?.format.map { $0.kind != .grammar } ?? false
        let generation = turns.generation(
            turn, of: session, route: "sessions", arrival: arrival,
            reason: SessionTurns.cancelReason(request.context))
        let sessionID = session.id
        let logprobs = turn.parameters.logprobs
        if body.stream == true {
            return .eventStream { [replicaId] stream in
                await stream.write(
                    generation, replica: replicaId, structured: structured, tools: tools, logprobs: logprobs
                ) { outcome in
                    SessionTurnBody(
                        outcome, requestID: turn.id, sessionID: sessionID, structured: structured, tools: tools,
                        logprobs: logprobs)
                }
            }
        }
        let outcome = await generation.run()
        if outcome.status == .failed { throw outcome.error ?? .internalError() }
        return .json(
            SessionTurnBody(
                outcome, requestID: turn.id, sessionID: sessionID, structured: structured, tools: tools,
                logprobs: logprobs))
    }

    func cancelInSession(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await requireSession(request)
        let body = try SessionCancelBody(request)
        try await turns.refuseIfRunningElsewhere(session, requestID: body.requestId)
        if let rid = body.requestId {
            guard let result = await session.cancel(requestID: rid, reason: .cancelRequest) else {
                throw HTTPError(SessionError.requestNotFound(rid))
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
            // Each key has its own namespace of request ids: another key's request with this id
            // is not found (the same 404 as an id nobody used).
            found = try await sessions.find(forRequest: rid, owner: access.owner(of: request))
        } catch {
            throw HTTPError(error)
        }
        guard let session = found, access.mayAccess(ownedBy: session.owner, request) else {
            throw HTTPError(SessionError.requestNotFound(rid))
        }
        try await turns.refuseIfRunningElsewhere(session, requestID: rid)
        guard let result = await session.cancel(requestID: rid, reason: .cancelRequest) else {
            throw HTTPError(SessionError.requestNotFound(rid))
        }
        return .json(CancellationBody(result))
    }

    func requireSession(_ request: HTTPRequest) async throws(HTTPError) -> Session {
        try await turns.require(id: request.pathParameters["id"] ?? "", request)
    }
}
