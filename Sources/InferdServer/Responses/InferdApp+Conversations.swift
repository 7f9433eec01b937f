import Backend
import Engine
import Foundation
import HTTPServer
import Sessions

/// OpenAI's Conversations API over inferd's sessions: a conversation is a session (`conv_x` is
/// `sess_x`), its items are the session's transcript, and a response with `conversation` is a
/// turn of that session, so its actor serializes them with the session's `on_busy` policy
/// (queued by default; 409 with `reject`), its KV cache is kept between them, and its durable
/// transcript survives restarts. Items may also be added or deleted by hand
/// (`InferdApp+ConversationItems.swift`): those edits go through the session's queue as well.
extension InferdApp {
    func addConversationRoutes(to router: Router) {
        router.post("/v1/conversations", openAI { [self] request in try await createConversation(request) })
        router.get("/v1/conversations/{id}", openAI { [self] request in try await getConversation(request) })
        router.post("/v1/conversations/{id}", openAI { [self] request in try await updateConversation(request) })
        router.delete("/v1/conversations/{id}", openAI { [self] request in try await deleteConversation(request) })
        router.get("/v1/conversations/{id}/items", openAI { [self] request in try await conversationItems(request) })
        router.post(
            "/v1/conversations/{id}/items", openAI { [self] request in try await addConversationItems(request) })
        router.get(
            "/v1/conversations/{id}/items/{item_id}",
            openAI { [self] request in
                try await conversationItem(request)
            })
        router.delete(
            "/v1/conversations/{id}/items/{item_id}",
            openAI { [self] request in
                try await deleteConversationItem(request)
            })
    }

    /// The session behind conversation `id` as `request` may see it; else 404 naming `param`.
    /// The conversation's session as `request` may see it, from the store when it is shared
    /// (a conversation created through another replica is found here too).
    func requireConversation(_ id: String, _ request: HTTPRequest, param: String) async throws -> Session {
        var found: Session?
        if let sid = ConversationObject.sessionID(of: id) {
            do {
                found = try await sessions.find(sid)
            } catch {
                throw OpenAIError(Self.httpError(for: error))
            }
        }
        guard let session = found, mayAccess(ownedBy: session.owner, request) else {
            throw OpenAIError(
                status: 404, message: "No conversation found with id '\(id)'.", type: "invalid_request_error",
                param: param, code: "conversation_not_found")
        }
        return session
    }

    func conversationObject(_ session: Session) async -> ConversationObject {
        let id = ConversationObject.id(ofSession: session.id)
        let metadata = (try? await responseStore.conversationMetadata(id)).flatMap {
            try? JSONDecoder().decode([String: String].self, from: Data($0.utf8))
        }
        return ConversationObject(id: id, createdAt: session.created, metadata: metadata ?? [:])
    }

    /// `POST /v1/conversations`: `metadata`, and `items` that may only be system or developer
    /// messages (they become the session's instructions).
    func createConversation(_ request: HTTPRequest) async throws -> HTTPResponse {
        let f = request.body.isEmpty ? OpenAIFields([:]) : try openAIFields(request)
        if let unknown = f.values.keys.sorted().first(where: { !["metadata", "items"].contains($0) }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: "unknown_parameter")
        }
        let metadata = try ResponsesRequest.metadata(f)
        var instructions: [String] = []
        if let raw = f["items"] {
            guard case .array(let items) = raw else { throw f.typeError("items", "a list of message items", raw) }
            for (i, item) in items.enumerated() {
                let message = try ResponsesRequest.message(item, path: "items[\(i)]")
                guard message.role == "system" || message.role == "developer" else {
                    throw OpenAIError.unsupported(
                        "items[\(i)]: a conversation starts with system or developer items only; user and assistant items come from its responses",
                        param: "items[\(i)].role")
                }
                instructions.append(message.text)
            }
        }
        let owner = owner(of: request)
        guard sessions.count(ownedBy: owner) < configuration.maxSessionsPerKey else {
            throw OpenAIError(
                status: 429,
                message: "this API key already has \(configuration.maxSessionsPerKey) sessions, the most allowed",
                type: "invalid_request_error", code: "session_limit")
        }
        let session: Session
        do {
            session = try await sessions.create(
                instructions: instructions.isEmpty ? nil : instructions.joined(separator: "\n\n"), onBusy: .queue,
                options: nil, owner: owner)
            if !metadata.isEmpty {
                try await responseStore.saveConversationMetadata(
                    ConversationObject.id(ofSession: session.id), Self.json(metadata))
            }
        } catch {
            throw OpenAIError(status: 500, message: "\(error)", type: "server_error", code: "storage_error")
        }
        return .json(await conversationObject(session))
    }

    func getConversation(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await requireConversation(
            request.pathParameters["id"] ?? "", request, param: "conversation_id")
        return .json(await conversationObject(session))
    }

    /// `POST /v1/conversations/{id}`: replaces its `metadata`.
    func updateConversation(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let session = try await requireConversation(id, request, param: "conversation_id")
        let f = try openAIFields(request)
        if let unknown = f.values.keys.sorted().first(where: { $0 != "metadata" }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: "unknown_parameter")
        }
        guard f["metadata"] != nil else {
            throw OpenAIError.invalid("metadata is required", param: "metadata", code: "missing_required_parameter")
        }
        do {
            try await responseStore.saveConversationMetadata(id, Self.json(try ResponsesRequest.metadata(f)))
        } catch let e as OpenAIError {
            throw e
        } catch {
            throw OpenAIError(status: 500, message: "\(error)", type: "server_error", code: "storage_error")
        }
        return .json(await conversationObject(session))
    }

    func deleteConversation(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let session = try await requireConversation(id, request, param: "conversation_id")
        do {
            _ = try await sessions.delete(session.id)
            try await responseStore.deleteConversationMetadata(id)
        } catch {
            throw OpenAIError(status: 500, message: "\(error)", type: "server_error", code: "storage_error")
        }
        return .json(DeletedConversation(id: id))
    }

    /// A response in a conversation: one user message as a turn of the session (its actor
    /// serializes turns with the session's `on_busy`), the session's instructions and KV cache.
    func createConversationResponse(
        _ body: ResponsesRequest, conversationID: String, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant
    ) async throws -> HTTPResponse {
        let session = try await requireConversation(conversationID, request, param: "conversation")
        guard body.input.count == 1, body.input[0].role == "user" else {
            throw OpenAIError.invalid(
                "with conversation, input must be one user message (it becomes the conversation's next turn)",
                param: "input")
        }
        guard body.instructions == nil else {
            throw OpenAIError.unsupported(
                "with conversation, the conversation's own instructions apply", param: "instructions")
        }
        guard body.truncation == "disabled" else {
            throw OpenAIError.unsupported(
                "with conversation, truncation must be disabled (a conversation keeps its whole transcript)",
                param: "truncation")
        }
        let turn: TurnRequest
        do {
            turn = try await admitSessionTurn(
                to: session, id: request.id, prompt: body.input[0].text, onBusy: nil, onCancel: nil,
                admission: body.admission, arrival: arrival, options: body.options, backend: backend,
                names: .openAI(maxTokens: "max_output_tokens", prompt: "input"), body: request.body)
        } catch let e as HTTPError {
            var error = OpenAIError(e)
            if ["session_busy", "session_queue_full", "session_not_found"].contains(e.code) {
                error.param = "conversation"
            }
            throw error
        }
        let object = ResponseObject(
            id: ResponseObject.makeID("resp"), createdAt: Int(Date().timeIntervalSince1970),
            conversation: .init(id: conversationID), status: body.background ? "queued" : "in_progress",
            background: body.background, instructions: nil, maxOutputTokens: body.maxOutputTokens,
            metadata: body.metadata, model: backend.modelName, output: [], previousResponseId: nil, store: body.store,
            temperature: body.temperature, text: body.text, topP: body.topP, truncation: body.truncation)
        let run = ResponseRun(
            ResponseRecord(
                response: object, input: body.input,
                history: [HistoryMessage(role: "user", content: body.input[0].text)], owner: owner(of: request)))
        await persist(run.record)
        liveResponses.add(run)
        let finisher = ResponseFinisher(
            app: self, run: run, backend: backend, sequence: nil, capacity: 0, requestID: request.id)
        let finish = { @Sendable (outcome: TurnOutcome) async -> ResponseRecord in
            let history = await session.snapshot(backend: nil).entries.compactMap { e -> HistoryMessage? in
                switch e.kind {
                case .instructions, .deleted: nil
                case .prompt: HistoryMessage(role: "user", content: e.content)
                case .response: HistoryMessage(role: "assistant", content: e.content)
                case .userItem, .assistantItem, .systemItem, .developerItem:
                    HistoryMessage(role: e.kind.itemRole ?? "user", content: e.content)
                }
            }
            return await finisher.finish(turn: outcome, history: history)
        }
        let latency = generations.latency(route: "responses", priority: body.admission.priority, arrival: arrival)
        let observe: @Sendable (GenerationEvent) -> Void = { event in
            latency.observe(event)
            run.apply(event)
        }
        if body.background {
            let task = Task { () -> Void in
                let outcome = await session.run(turn.id, observer: observe, cancelReason: { .cancelRequest })
                latency.finish(promptMilliseconds: outcome.timings?.promptMilliseconds)
                _ = await finish(outcome)
            }
            liveResponses.setTask(object.id, task)
            return .json(run.record.response)
        }
        let reason = sessionCancelReason(request.context)
        if body.stream {
            return .eventStream { stream in
                run.subscribe(after: -1) { e in stream.send(event: e.type, data: Self.json(e)) }
                let outcome = await session.run(turn.id, observer: observe, cancelReason: reason)
                latency.finish(promptMilliseconds: outcome.timings?.promptMilliseconds)
                _ = await finish(outcome)
            }
        }
        let outcome = await session.run(turn.id, observer: observe, cancelReason: reason)
        latency.finish(promptMilliseconds: outcome.timings?.promptMilliseconds)
        let final = await finish(outcome)
        if outcome.status == .failed, let error = final.response.error {
            throw OpenAIError(
                status: 500, message: error.message, type: "server_error", code: error.code)
        }
        return .json(final.response)
    }
}
