import Backend
import Engine
import Foundation
import HTTPServer
import Sessions

/// OpenAI's Responses API on `POST /v1/responses`: the same `GenerationService` path as the chat
/// route (validation, submission, metrics, error mapping), answered as response objects and
/// Responses stream events. Ownership follows the seeds: a foreground response is its request's
/// Task's work (a client that leaves cancels it, and it is stored `cancelled`); a background one
/// is a Task the server keeps (`ResponseRegistry`), which only the cancel route stops. Reading,
/// deleting and cancelling stored responses: `ResponsesRoutes+Stored.swift`; a response in a
/// conversation: `ConversationRoutes+Respond.swift`.
struct ResponsesRoutes: Sendable {
    let generations: GenerationService
    let archive: ResponseArchive
    let conversations: ConversationRoutes
    let access: AccessControl
    let host: ModelHost
    /// How tool calls are written in this model's answers (as on the chat route).
    var toolCallFormat = ToolCallFormatSetting.auto

    /// How long a cancel sent to another replica than the owner waits for the owner to stop it.
    static let remoteCancelTimeout: Duration = .seconds(30)

    func register(_ router: Router) {
        let openAI = OpenAIRoutes.openAI
        router.post("/v1/responses", openAI { request in try await create(request) })
        router.get("/v1/responses/{id}", openAI { request in try await get(request) })
        router.delete("/v1/responses/{id}", openAI { request in try await delete(request) })
        router.get("/v1/responses/{id}/input_items", openAI { request in try await inputItems(request) })
        router.post("/v1/responses/{id}/cancel", openAI { request in try await cancel(request) })
    }

    /// A prepared response: its record, the generation to run and the KV cache it continues.
    struct PreparedResponse {
        var record: ResponseRecord
        var generation: BackendRequest
        var cacheCapacity: Int
        /// With tools (or tool turns in the history): reads the answer's calls.
        var tools: ToolAnswerTracker?
    }

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = generations.now
        let backend = try host.requireBackend()
        let body = try ResponsesRequest(try OpenAIRoutes.fields(request))
        try OpenAIRoutes.checkModel(body.model, backend)
        if let conversation = body.conversationID {
            return try await conversations.respond(
                body, conversationID: conversation, backend: backend, request: request, arrival: arrival)
        }
        if body.store {
            try checkItems(body)
            try await archive.admitStored(owner: access.owner(of: request))
        }
        let prepared = try await prepare(body, backend: backend, request: request, arrival: arrival)
        let id = prepared.record.response.id
        let context = request.context
        let run = ResponseRun(prepared.record, tools: prepared.tools, logprobs: prepared.generation.logprobs)
        let generation: AdmittedGeneration
        do {
            // Live before it is admitted: a background one counts against its key's quota at once.
            try archive.goLive(run)
            do {
                // A background response is stopped only by the cancel route (the server owns its Task).
                generation = try generations.admit(
                    prepared.generation, backend: backend, requestID: request.id, route: "responses",
                    arrival: arrival, reason: { body.background ? .cancelRequest : context.cancellationReason })
            } catch {
                archive.live.remove(id)
                throw OpenAIError(error)
            }
        } catch {
            archive.releaseCache(nil, capacity: 0, responseID: id, keep: false, backend: backend)
            throw error
        }
        await archive.persist(run.record)
        let finisher = ResponseFinisher(
            archive: archive, run: run, backend: backend, sequence: prepared.generation.sequence,
            capacity: prepared.cacheCapacity, requestID: request.id)
        return try await archive.answer(generation, run: run, background: body.background, stream: body.stream) {
            outcome in
            await finisher.finish(outcome)
        }
    }

    /// A stored response's messages (`input`, `instructions`) each within `max_item_bytes`.
    func checkItems(_ body: ResponsesRequest) throws(OpenAIError) {
        do {
            for (i, item) in body.input.enumerated() {
                try archive.quota.checkItem(item.text, field: body.inputField(i))
            }
            if let instructions = body.instructions { try archive.quota.checkItem(instructions, field: "instructions") }
        } catch {
            throw OpenAIError(HTTPError(error))
        }
    }

    /// Reads the chain, renders the prompt (dropping the oldest items with `truncation: auto`),
    /// checks limits, and picks up the KV cache the previous response left.
    func prepare(
        _ body: ResponsesRequest, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant
    ) async throws -> PreparedResponse {
        var history: [HistoryMessage] = []
        if let previous = body.previousResponseID {
            let record = try await archive.load(previous, request, param: "previous_response_id")
            guard record.response.isFinished else {
                throw OpenAIError.invalid(
                    "previous response \(previous) is still \(record.response.status); wait until it has finished",
                    param: "previous_response_id", code: .responseInProgress)
            }
            history = record.history
        }
        let input = HistoryMessage.of(body.input, after: history)
        // A function_call_output answers a call of this input or of an earlier turn.
        try ResponsesRequest.checkToolOutputs(
            body.input, earlier: Set(history.flatMap { $0.toolCalls ?? [] }.map(\.id)))
        if body.store {
            // A stored response keeps its whole chain: as a session's transcript, it is bounded.
            let bytes = history.reduce(0) { $0 + $1.bytes }
            let adding = input.reduce(0) { $0 + $1.bytes }
            if let refusal = archive.quota.admitTranscript(
                bytes: bytes, adding: adding, of: "the previous_response_id chain")
            {
                throw OpenAIError(HTTPError(refusal), param: refusal.quota)
            }
        }
        var messages = history + input
        // A thinking model's reasoning becomes a `reasoning` output item (over a remote engine the
        // answer's text is kept as the upstream wrote it).
        var toolCalling = try ChatToolCalling.make(
            backend, messages: messages.map(\.chatMessage), tools: body.tools, hasFormat: body.options.format != nil,
            splitsReasoning: !(backend.forwardsTools && backend.chatTemplateSource == nil), setting: toolCallFormat,
            names: .responses)
        var prompt = try self.prompt(body.instructions, messages, tools: toolCalling, body.tools, backend: backend)
        if body.truncation == "auto" {
            let room = backend.contextLength - (body.maxOutputTokens ?? 1)
            while prompt.tokenCount > room, messages.count > 1 {
                messages.removeFirst()
                prompt = try self.prompt(body.instructions, messages, tools: toolCalling, body.tools, backend: backend)
            }
        }
        toolCalling = try ChatToolCalling.finish(
            toolCalling, prompt: prompt, budget: body.reasoningBudget, backend: backend, names: .responses)
        var generation: BackendRequest
        do {
            generation = try generations.makeRequest(
                prompt: prompt, options: body.options, backend: backend, for: request, cacheSalt: body.cacheSalt,
                names: .openAI(maxTokens: "max_output_tokens", prompt: "input"))
        } catch {
            throw OpenAIError(error)
        }
        if let constraint = toolCalling?.constraint { generation.constraint = constraint }
        if let ask = body.logprobs {
            guard backend.computesLogprobs else {
                throw OpenAIError.unsupported(
                    "include: this server's backend does not compute log-probabilities", param: "include")
            }
            // Their events follow the plain answer's text; an answer read as calls or
            // reasoning items is streamed in other steps.
            guard toolCalling == nil else {
                throw OpenAIError.unsupported(
                    "include: log-probabilities are given for plain text answers, not with tools or a thinking model",
                    param: "include")
            }
            generation.logprobs = ask.recorder()
        }
        generation.priority = body.admission.priority
        generation.deadline = body.admission.deadline(from: arrival)

        let id = ResponseObject.makeID("resp")
        var object = ResponseObject(
            id: id, createdAt: Int(Date().timeIntervalSince1970),
            status: body.background ? "queued" : "in_progress", background: body.background,
            instructions: body.instructions, maxOutputTokens: body.maxOutputTokens, metadata: body.metadata,
            model: backend.modelName, output: [], previousResponseId: body.previousResponseID, store: body.store,
            temperature: body.temperature, text: body.text, topP: body.topP, truncation: body.truncation)
        object.parallelToolCalls = body.parallelToolCalls
        object.toolChoice = body.toolChoiceEcho
        object.tools = body.toolsEcho
        let record = ResponseRecord(
            response: object, input: body.input, history: history + input, owner: access.owner(of: request))

        // A stored response may be continued, so it runs on a KV cache kept for its successor;
        // the previous response's cache, when still kept, is continued (`cached_tokens`).
        var capacity = 0
        if body.store, let cache = backend.kvCache {
            let needed = generation.prompt.tokenCount + generation.maxTokens
            capacity = min(backend.contextLength, (max(2 * needed, 1024) + 1023) / 1024 * 1024)
            let caches = archive.caches
            var kept: (any PredictorSequence)?
            if let previous = body.previousResponseID {
                kept = caches.checkOut(ResponseArchive.cacheOwner(previous), reservingBytes: 0)
                caches.drop(ResponseArchive.cacheOwner(previous))
            }
            if let kept, kept.capacity >= needed {
                generation.sequence = kept
                capacity = kept.capacity
            } else {
                generation.sequence = cache.makeSequence(capacity: capacity)
            }
            // Counted in the budget while it runs, as a session's turn is.
            _ = caches.checkOut(ResponseArchive.cacheOwner(id), reservingBytes: capacity * cache.kvBytesPerToken)
        }
        return PreparedResponse(
            record: record, generation: generation, cacheCapacity: capacity,
            tools: toolCalling.map { ToolAnswerTracker(format: $0.format) })
    }

    /// The prompt of `messages`; with tool calling, as its format prompts tools and tool turns.
    func prompt(
        _ instructions: String?, _ messages: [HistoryMessage], tools toolCalling: ChatToolCalling? = nil,
        _ tools: ToolUse? = nil, backend: any GenerationBackend
    ) throws -> PreparedPrompt {
        let chat = messages.map(\.chatMessage)
        let input =
            toolCalling?.prompt.input(instructions: instructions, messages: chat, tools: tools, templateArguments: nil)
            ?? .conversation(instructions: instructions, messages: chat)
        do {
            return try generations.prepare(backend, input)
        } catch {
            throw OpenAIError(error, param: "input")
        }
    }
}
