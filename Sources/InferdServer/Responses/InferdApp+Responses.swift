import Backend
import Engine
import Foundation
import HTTPServer
import Sessions

/// OpenAI's Responses API on `POST /v1/responses`: the same `GenerationService` path as the chat
/// route (validation, submission, metrics, error mapping), answered as response objects and
/// Responses stream events. Ownership follows the seeds: a foreground response is its request's
/// Task's work (a client that leaves cancels it, and it is stored `cancelled`); a background one
/// is a Task the app keeps (`ResponseRegistry`), which only the cancel route stops.
extension InferdApp {
    func addResponsesRoutes(to router: Router) {
        router.post("/v1/responses", openAI { [self] request in try await createResponse(request) })
        router.get("/v1/responses/{id}", openAI { [self] request in try await getResponse(request) })
        router.delete("/v1/responses/{id}", openAI { [self] request in try await deleteResponse(request) })
        router.get("/v1/responses/{id}/input_items", openAI { [self] request in try await responseInputItems(request) })
        router.post("/v1/responses/{id}/cancel", openAI { [self] request in try await cancelResponse(request) })
        addConversationRoutes(to: router)
    }

    /// A prepared response: its record, the generation to run and the KV cache it continues.
    struct PreparedResponse {
        var record: ResponseRecord
        var generation: BackendRequest
        var cacheCapacity: Int
    }

    func createResponse(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = ContinuousClock.now
        let backend = try requireBackend()
        let body = try ResponsesRequest(try openAIFields(request))
        try checkModel(body.model, backend)
        if let conversation = body.conversationID {
            return try await createConversationResponse(
                body, conversationID: conversation, backend: backend, request: request, arrival: arrival)
        }
        let prepared = try await prepareResponse(body, backend: backend, request: request, arrival: arrival)
        let id = prepared.record.response.id
        let relay = GenerationEventRelay()
        let ticket: PendingGeneration
        do {
            ticket = try generations.submitGeneration(
                prepared.generation, backend: backend, requestID: request.id, route: "responses", arrival: arrival,
                onEvent: relay.forward)
        } catch {
            releaseCache(nil, capacity: 0, responseID: id, keep: false, backend: backend)
            throw OpenAIError(error)
        }
        let run = ResponseRun(prepared.record)
        relay.attach { run.apply($0) }
        await persist(run.record)
        liveResponses.add(run)
        let finisher = ResponseFinisher(
            app: self, run: run, backend: backend, sequence: prepared.generation.sequence,
            capacity: prepared.cacheCapacity, requestID: request.id)

        if body.background {
            // Owned by the server, not the connection: the request's cancellation never reaches it.
            let task = Task { [self] () -> Void in
                let result = await settleBackground(ticket, run: run, requestID: request.id)
                _ = await finisher.finish(result, cancelledBy: "cancel_request")
            }
            liveResponses.setTask(id, task)
            return .json(run.record.response)
        }
        if body.stream {
            return .eventStream { [self] stream in
                run.subscribe(after: -1) { e in stream.send(event: e.type, data: Self.json(e)) }
                let result = await settle(ticket, requestID: request.id)
                await finisher.finish(result, cancelledBy: stream.context.cancellationReason?.rawValue)
            }
        }
        let result = await settle(ticket, requestID: request.id)
        let final = await finisher.finish(result, cancelledBy: request.context.cancellationReason?.rawValue)
        if case .failure(let e) = result { throw OpenAIError(e) }
        return .json(final.response)
    }

    /// Awaits a submitted generation (the awaiting Task's cancellation stops it) as a result.
    func settle(_ ticket: PendingGeneration, requestID: String) async -> Result<GenerationResult, HTTPError> {
        do {
            return .success(try await generations.awaitGeneration(ticket, requestID: requestID))
        } catch {
            return .failure(error)
        }
    }

    /// Reads the chain, renders the prompt (dropping the oldest items with `truncation: auto`),
    /// checks limits, and picks up the KV cache the previous response left.
    func prepareResponse(
        _ body: ResponsesRequest, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant
    ) async throws -> PreparedResponse {
        var history: [HistoryMessage] = []
        if let previous = body.previousResponseID {
            let record = try await loadResponse(previous, request, param: "previous_response_id")
            guard record.response.isFinished else {
                throw OpenAIError.invalid(
                    "previous response \(previous) is still \(record.response.status); wait until it has finished",
                    param: "previous_response_id", code: "response_in_progress")
            }
            history = record.history
        }
        let input = body.input.map { HistoryMessage(role: $0.role, content: $0.text) }
        var messages = history + input
        var prompt = try responsePrompt(body.instructions, messages, backend: backend)
        if body.truncation == "auto" {
            let room = backend.contextLength - (body.maxOutputTokens ?? 1)
            while prompt.tokenCount > room, messages.count > 1 {
                messages.removeFirst()
                prompt = try responsePrompt(body.instructions, messages, backend: backend)
            }
        }
        var generation: BackendRequest
        do {
            generation = try generations.makeRequest(
                prompt: prompt, options: body.options, backend: backend, label: request.id,
                names: .openAI(maxTokens: "max_output_tokens", prompt: "input"), body: request.body)
        } catch {
            throw OpenAIError(error)
        }
        generation.priority = body.admission.priority
        generation.deadline = body.admission.deadline(from: arrival)

        let id = ResponseObject.makeID("resp")
        let object = ResponseObject(
            id: id, createdAt: Int(Date().timeIntervalSince1970),
            status: body.background ? "queued" : "in_progress", background: body.background,
            instructions: body.instructions, maxOutputTokens: body.maxOutputTokens, metadata: body.metadata,
            model: backend.modelName, output: [], previousResponseId: body.previousResponseID, store: body.store,
            temperature: body.temperature, text: body.text, topP: body.topP, truncation: body.truncation)
        let record = ResponseRecord(
            response: object, input: body.input, history: history + input, owner: owner(of: request))

        // A stored response may be continued, so it runs on a KV cache kept for its successor;
        // the previous response's cache, when still kept, is continued (`cached_tokens`).
        var capacity = 0
        if body.store, let cache = backend.kvCache {
            let needed = generation.prompt.tokenCount + generation.maxTokens
            capacity = min(backend.contextLength, (max(2 * needed, 1024) + 1023) / 1024 * 1024)
            let caches = sessions.environment.caches
            var kept: (any PredictorSequence)?
            if let previous = body.previousResponseID {
                kept = caches.checkOut(Self.cacheOwner(previous), reservingBytes: 0)
                caches.drop(Self.cacheOwner(previous))
            }
            if let kept, kept.capacity >= needed {
                generation.sequence = kept
                capacity = kept.capacity
            } else {
                generation.sequence = cache.makeSequence(capacity: capacity)
            }
            // Counted in the budget while it runs, as a session's turn is.
            _ = caches.checkOut(Self.cacheOwner(id), reservingBytes: capacity * cache.kvBytesPerToken)
        }
        return PreparedResponse(record: record, generation: generation, cacheCapacity: capacity)
    }

    func responsePrompt(_ instructions: String?, _ messages: [HistoryMessage], backend: any GenerationBackend)
        throws -> PreparedPrompt
    {
        let chat = messages.map { m in
            ChatMessage(
                role: m.role == "assistant" ? .assistant : (m.role == "user" ? .user : .system), content: m.content)
        }
        do {
            return try preparePrompt(backend, .conversation(instructions: instructions, messages: chat))
        } catch {
            throw OpenAIError(error, param: "input")
        }
    }

    /// The KV-cache budget's name for the cache a response left for its successor.
    static func cacheOwner(_ responseID: String) -> String { "response:" + responseID }

    /// Keeps a finished response's cache for its successor (under the sessions' budget), or lets
    /// it go and ends its reservation.
    func releaseCache(
        _ sequence: (any PredictorSequence)?, capacity: Int, responseID id: String, keep: Bool,
        backend: any GenerationBackend
    ) {
        let caches = sessions.environment.caches
        guard keep, let sequence, let cache = backend.kvCache else {
            caches.drop(Self.cacheOwner(id))
            return
        }
        caches.checkIn(Self.cacheOwner(id), sequence: sequence, bytes: capacity * cache.kvBytesPerToken)
    }

    /// Writes a stored response (and applies retention when it starts); a failing database is
    /// logged, never fatal to the answer.
    func persist(_ record: ResponseRecord, applyRetention: Bool = true) async {
        guard record.response.store else { return }
        do {
            try await responseStore.save(
                StoredResponse(
                    id: record.response.id, owner: record.owner, createdAt: record.response.createdAt,
                    status: record.response.status, payload: Self.json(record), replica: replicaId))
            if applyRetention, !record.response.isFinished {
                let cutoff = Int(Date().timeIntervalSince1970) - configuration.responseMaxAgeDays * 86_400
                for id in try await responseStore.prune(
                    olderThan: cutoff, keepingAtMost: configuration.maxStoredResponses)
                {
                    sessions.environment.caches.drop(Self.cacheOwner(id))
                }
            }
        } catch {
            logger.error("response store write failed", ["response_id": record.response.id, "error": "\(error)"])
        }
    }
}
