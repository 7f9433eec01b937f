import Engine
import Foundation
import HTTPServer
import Telemetry

extension InferdApp {
    /// `POST /v1/responses`: an independent one-shot generation with an ephemeral sequence.
    func respond(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = ContinuousClock.now
        let engine = try requireEngine()
        let body = try request.decodeJSON(ResponseRequestBody.self)
        guard !body.prompt.isEmpty else {
            throw HTTPError.badRequest("prompt must not be empty", code: "invalid_request")
        }
        let admission = try AdmissionFields(priority: body.priority, timeoutSeconds: body.timeoutSeconds)
        var messages: [ChatMessage] = []
        if let instructions = body.instructions { messages.append(ChatMessage(role: .system, content: instructions)) }
        messages.append(ChatMessage(role: .user, content: body.prompt))
        let prompt = try chatPromptTokens(engine, messages)
        var generation = try makeGenerationRequest(
            prompt: prompt, options: body.options, engine: engine, label: request.id)
        generation.priority = admission.priority
        generation.deadline = admission.deadline(from: arrival)
        if body.stream == true {
            // Submitted before the stream starts, so a full queue is still a plain 503.
            let relay = GenerationEventRelay()
            let ticket = try submitGeneration(generation, engine: engine, requestID: request.id, onEvent: relay.forward)
            return .eventStream { [self] stream in
                await streamResponse(ticket, events: relay, engine: engine, stream: stream)
            }
        }
        let result = try await runGeneration(generation, engine: engine, requestID: request.id)
        let reason = result.finishReason == .cancelled ? request.context.cancellationReason?.rawValue : nil
        return .json(responseBody(result, id: request.id, engine: engine, reason: reason))
    }

    /// Validates options and the context budget before anything is computed or streamed.
    func makeGenerationRequest(
        prompt: [Int32], options: GenerationOptionsBody?, engine: InferenceEngine, label: String
    ) throws -> GenerationRequest {
        let o = options ?? GenerationOptionsBody()
        let (sampling, stop) = try o.validatedSamplingAndStop()
        let context = engine.contextLength
        let maxTokens: Int
        if let requested = o.maxTokens {
            guard requested >= 1 else {
                throw HTTPError.badRequest("max_tokens must be at least 1", code: "invalid_option")
            }
            maxTokens = requested
        } else {
            // Without an explicit budget, answer as much as fits (up to the configured default and limit).
            let budget = min(configuration.defaultMaxTokens, configuration.maxTokensLimit)
            maxTokens = max(1, min(budget, context - prompt.count))
        }
        guard prompt.count + maxTokens <= context else {
            throw HTTPError(
                status: 400,
                message:
                    "\(GenerationError.contextOverflow(promptTokens: prompt.count, maxTokens: maxTokens, contextLength: context))",
                type: "invalid_request_error", code: "context_length_exceeded")
        }
        // After the context check, so a request that could never fit is told so first.
        guard prompt.count <= configuration.maxPromptTokens else {
            throw HTTPError.badRequest(
                "the prompt is \(prompt.count) tokens; this server accepts at most \(configuration.maxPromptTokens)",
                code: "prompt_too_long")
        }
        guard maxTokens <= configuration.maxTokensLimit else {
            throw HTTPError.badRequest(
                "max_tokens is \(maxTokens); this server allows at most \(configuration.maxTokensLimit)",
                code: "max_tokens_too_large")
        }
        var request = GenerationRequest(
            promptTokens: prompt, maxTokens: maxTokens, sampling: sampling, stop: stop, label: label)
        request.ignoreEndOfGeneration = o.ignoreEos ?? false
        return request
    }

    /// Runs a generation, maps engine errors to HTTP errors, and records metrics and a log line.
    func runGeneration(
        _ generation: GenerationRequest, engine: InferenceEngine, requestID: String,
        onEvent: @escaping @Sendable (GenerationEvent) -> Void = { _ in }
    ) async throws(HTTPError) -> GenerationResult {
        let ticket = try submitGeneration(generation, engine: engine, requestID: requestID, onEvent: onEvent)
        return try await awaitGeneration(ticket, requestID: requestID)
    }

    /// Hands a generation to the engine; a full queue is 503 `server_busy` with `Retry-After`.
    /// A request that may share an identical generation in flight (single-flight) is only
    /// checked for capacity here: whether it joins or starts one is decided when it is awaited.
    func submitGeneration(
        _ generation: GenerationRequest, engine: InferenceEngine, requestID: String,
        onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(HTTPError) -> PendingGeneration {
        do {
            if configuration.singleFlight && engine.isShareable(generation) {
                try engine.runner.checkCapacity()
                return .shared(generation, engine, onEvent)
            }
            return .ticket(try engine.submit(generation, onEvent: onEvent))
        } catch {
            throw recordFailure(error, requestID: requestID)
        }
    }

    /// Awaits a submitted generation (its Task's cancellation stops it), then records it.
    func awaitGeneration(_ pending: PendingGeneration, requestID: String) async throws(HTTPError) -> GenerationResult {
        let result: GenerationResult
        do {
            result = try await pending.result()
        } catch {
            throw recordFailure(error, requestID: requestID)
        }
        record(result, requestID: requestID)
        return result
    }

    /// Logs and counts a generation that ended without a result; returns the error to answer.
    /// A full queue or a timeout while waiting is load, not a failure: counted by the engine's
    /// own series and logged at info.
    func recordFailure(_ error: GenerationError, requestID: String) -> HTTPError {
        let answer = Self.httpError(for: error)
        switch error {
        case .serverBusy, .queueTimeout:
            logger.info("generation refused", ["request_id": requestID, "code": answer.code])
        default:
            metrics.counter(
                "inferd_generations_total", help: "Generations by how they ended.", labels: ["finish_reason": "error"]
            ).increment()
            logger.warning("generation failed", ["request_id": requestID, "error": "\(error)"])
        }
        return answer
    }

    func record(_ result: GenerationResult, requestID: String) {
        metrics.counter(
            "inferd_generations_total", help: "Generations by how they ended.",
            labels: ["finish_reason": result.finishReason.rawValue]
        ).increment()
        metrics.counter("inferd_prompt_tokens_total", help: "Prompt tokens received.")
            .increment(by: Double(result.usage.promptTokens))
        metrics.counter("inferd_prompt_tokens_cached_total", help: "Prompt tokens reused from a KV cache.")
            .increment(by: Double(result.usage.cachedTokens))
        metrics.counter("inferd_completion_tokens_total", help: "Tokens generated.")
            .increment(by: Double(result.usage.completionTokens))
        if let leader = result.sharedFrom {
            singleFlightJoins.increment()
            logger.info(
                "request joined an identical generation",
                ["request_id": requestID, "leader_request_id": leader, "finish_reason": result.finishReason.rawValue])
        }
        logger.info(
            "generation finished",
            [
                "request_id": requestID, "finish_reason": result.finishReason.rawValue,
                "prompt_tokens": "\(result.usage.promptTokens)", "cached_tokens": "\(result.usage.cachedTokens)",
                "completion_tokens": "\(result.usage.completionTokens)",
                "tokens_per_second": String(format: "%.1f", result.timings.generationTokensPerSecond),
                "steps_after_cancel": "\(result.stepsAfterCancel)",
            ])
    }

    /// Requests served by joining an identical generation in flight.
    var singleFlightJoins: Counter {
        metrics.counter(
            "inferd_single_flight_joined_total",
            help: "Requests served by joining an identical deterministic generation already in flight.")
    }

    static func httpError(for error: GenerationError) -> HTTPError {
        switch error {
        case .contextOverflow:
            HTTPError(status: 400, message: "\(error)", type: "invalid_request_error", code: "context_length_exceeded")
        case .emptyPrompt:
            HTTPError.badRequest("\(error)", code: "invalid_request")
        case .invalidOption:
            HTTPError.badRequest("invalid options: \(error)", code: "invalid_option")
        case .shuttingDown:
            HTTPError.serviceUnavailable("\(error)", code: "shutting_down")
        case .computeFailed:
            HTTPError.internalError("\(error)")
        case .serverBusy(_, let retryAfter):
            HTTPError(
                status: 503, message: "\(error); retry in about \(retryAfter) s", type: "server_error",
                code: "server_busy", retryAfterSeconds: retryAfter)
        case .queueTimeout:
            HTTPError.serviceUnavailable("\(error) (timeout_seconds passed before it started)", code: "timeout")
        }
    }

    func responseBody(_ result: GenerationResult, id: String, engine: InferenceEngine, reason: String?) -> ResponseBody
    {
        ResponseBody(
            id: id, created: Int(Date().timeIntervalSince1970), model: engine.modelName,
            status: result.finishReason == .cancelled ? "cancelled" : "completed", content: result.content,
            finishReason: result.finishReason.rawValue, usage: UsageBody(result.usage),
            timings: TimingsBody(result.timings), reason: reason)
    }

    /// The SSE side of `/v1/responses`: `queued` while it waits for a place in the engine,
    /// `started`, `snapshot`s (conflated for slow readers), then exactly one of `completed`,
    /// `cancelled` or `error` (`timeout` when it waited past its `timeout_seconds`).
    func streamResponse(
        _ ticket: PendingGeneration, events: GenerationEventRelay, engine: InferenceEngine, stream: EventStream
    ) async {
        let id = stream.requestID
        events.attach { event in
            switch event {
            case .queued(let position):
                stream.send(event: "queued", data: Self.json(QueuedEvent(requestId: id, position: position)))
            case .promptProcessed(let p, let c):
                stream.send(
                    event: "started", data: Self.json(StartedEvent(requestId: id, promptTokens: p, cachedTokens: c)))
            case .snapshot(let content, let n):
                stream.sendSnapshot(
                    event: "snapshot",
                    data: Self.json(SnapshotEvent(requestId: id, content: content, completionTokens: n)))
            }
        }
        let result: GenerationResult
        do {
            result = try await awaitGeneration(ticket, requestID: id)
        } catch {
            stream.send(
                event: "error",
                data: Self.json(
                    ErrorEvent(
                        requestId: id, error: .init(message: error.message, type: error.type, code: error.code))))
            return
        }
        if result.finishReason == .cancelled {
            let reason = stream.context.cancellationReason?.rawValue ?? "cancelled"
            stream.send(
                event: "cancelled", data: Self.json(responseBody(result, id: id, engine: engine, reason: reason)))
        } else {
            stream.send(event: "completed", data: Self.json(responseBody(result, id: id, engine: engine, reason: nil)))
        }
    }

    static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
