import Backend
import Engine
import Foundation
import HTTPServer
import Telemetry

/// The one path every route's generation takes, whatever its wire format: validate options and
/// limits against the configuration, submit to the `GenerationBackend` (single-flight or its
/// queue, with priority and deadline), await, record the metrics and the `generation finished` line, and map engine
/// errors to what a client is told. Routes translate their wire format to and from it; none of
/// them repeats a limit check, a metric or an error mapping.
final class GenerationService: Sendable {
    let configuration: ServerConfiguration
    let logger: Logger
    let metrics: Metrics

    init(configuration: ServerConfiguration, logger: Logger, metrics: Metrics) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
    }

    /// Validates options and the context budget before anything is computed or streamed. Every
    /// error names its field as `names` spells it for the caller's wire format.
    func makeRequest(
        prompt: PreparedPrompt, options: GenerationOptionsBody?, backend: any GenerationBackend, label: String,
        names: FieldNames = .native, body: [UInt8] = []
    ) throws(HTTPError) -> BackendRequest {
        let o = options ?? GenerationOptionsBody()
        let (sampling, stop) = try o.validatedSamplingAndStop(names: names)
        let context = backend.contextLength
        let maxTokens: Int
        if let requested = o.maxTokens {
            guard requested >= 1 else {
                throw .badRequest(
                    "\(names.maxTokens) must be at least 1", code: "invalid_option", param: names.maxTokensParam)
            }
            maxTokens = requested
        } else {
            // Without an explicit budget, answer as much as fits (up to the configured default and limit).
            let budget = min(configuration.defaultMaxTokens, configuration.maxTokensLimit)
            maxTokens = max(1, min(budget, context - prompt.tokenCount))
        }
        guard prompt.tokenCount + maxTokens <= context else {
            var e = Self.httpError(
                for: .contextOverflow(promptTokens: prompt.tokenCount, maxTokens: maxTokens, contextLength: context))
            e.param = names.prompt
            throw e
        }
        // After the context check, so a request that could never fit is told so first.
        guard prompt.tokenCount <= configuration.maxPromptTokens else {
            throw .badRequest(
                "the prompt is \(prompt.tokenCount) tokens; this server accepts at most \(configuration.maxPromptTokens)",
                code: "prompt_too_long", param: names.prompt)
        }
        guard maxTokens <= configuration.maxTokensLimit else {
            throw .badRequest(
                "\(names.maxTokens) is \(maxTokens); this server allows at most \(configuration.maxTokensLimit)",
                code: "max_tokens_too_large", param: names.maxTokensParam)
        }
        var request = BackendRequest(prompt: prompt, maxTokens: maxTokens, sampling: sampling, stop: stop, label: label)
        request.ignoreEndOfGeneration = o.ignoreEos ?? false
        // `body` lets the schema be re-read in its key order (the option readers' objects are unordered).
        request.constraint = try o.format?.constraint(backend: backend, body: body)
        return request
    }

    /// Runs a generation, maps engine errors to HTTP errors, and records metrics and a log line.
    func runGeneration(
        _ generation: BackendRequest, backend: any GenerationBackend, requestID: String, route: String,
        arrival: ContinuousClock.Instant, onEvent: @escaping @Sendable (GenerationEvent) -> Void = { _ in }
    ) async throws(HTTPError) -> GenerationResult {
        let ticket = try submitGeneration(
            generation, backend: backend, requestID: requestID, route: route, arrival: arrival, onEvent: onEvent)
        return try await awaitGeneration(ticket, requestID: requestID)
    }

    /// Hands a generation to the backend; a full queue is 503 `server_busy` with `Retry-After`.
    /// A request that may share an identical generation in flight (single-flight) is only
    /// checked for capacity here: whether it joins or starts one is decided when it is awaited.
    /// `route` and `arrival` label and start the request's latency histograms (`RequestLatency`).
    func submitGeneration(
        _ generation: BackendRequest, backend: any GenerationBackend, requestID: String, route: String,
        arrival: ContinuousClock.Instant, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(HTTPError) -> PendingGeneration {
        let latency = latency(route: route, priority: generation.priority, arrival: arrival)
        let pending: PendingGeneration
        do {
            pending = try backend.submit(generation, sharing: configuration.singleFlight) { event in
                latency.observe(event)
                onEvent(event)
            }
        } catch {
            latency.finish(promptMilliseconds: nil)
            throw recordFailure(error, requestID: requestID)
        }
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            let result: GenerationResult
            do throws(GenerationError) {
                result = try await pending.result()
            } catch {
                latency.finish(promptMilliseconds: nil)
                throw error
            }
            latency.finish(promptMilliseconds: result.timings.promptMilliseconds)
            return result
        }
    }

    /// A request's latency histograms; a route that runs its generation elsewhere (a session)
    /// feeds it the events and ends it itself.
    func latency(route: String, priority: GenerationPriority, arrival: ContinuousClock.Instant) -> RequestLatency {
        RequestLatency(metrics: metrics, route: route, priority: priority, arrival: arrival)
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
        case .serverBusy, .queueTimeout, .upstreamUnavailable:
            logger.info("generation refused", ["request_id": requestID, "code": answer.code])
        default:
            metrics.counter(
                "inferd_generations_total", help: "Generations by how they ended.", labels: ["finish_reason": "error"]
            ).increment()
            logger.warning("generation failed", ["request_id": requestID, "error": "\(error)"])
        }
        return answer
    }

    /// Counts a finished generation (the `inferd_generations_total` series last, so whoever sees
    /// it has every other series of this generation already) and logs it.
    func record(_ result: GenerationResult, requestID: String) {
        metrics.counter(
            "inferd_generation_steps_after_cancel_total",
            help: "Decode steps a generation took after its request was cancelled (0 or 1 when it stops at once)."
        ).increment(by: Double(result.stepsAfterCancel))
        metrics.counter("inferd_prompt_tokens_total", help: "Prompt tokens received.")
            .increment(by: Double(result.usage.promptTokens))
        metrics.counter("inferd_prompt_tokens_cached_total", help: "Prompt tokens reused from a KV cache.")
            .increment(by: Double(result.usage.cachedTokens))
        metrics.counter("inferd_completion_tokens_total", help: "Tokens generated.")
            .increment(by: Double(result.usage.completionTokens))
        metrics.counter(
            "inferd_generations_total", help: "Generations by how they ended.",
            labels: ["finish_reason": result.finishReason.rawValue]
        ).increment()
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

    /// The one mapping from engine errors to what a client is told: status, type and code (the
    /// code is `GenerationError.code`, which the session metrics count by too).
    static func httpError(for error: GenerationError) -> HTTPError {
        switch error {
        case .contextOverflow:
            HTTPError(status: 400, message: "\(error)", type: "invalid_request_error", code: error.code)
        case .emptyPrompt:
            HTTPError.badRequest("\(error)", code: error.code)
        case .invalidOption(let name, _):
            HTTPError.badRequest("invalid options: \(error)", code: error.code, param: name)
        case .shuttingDown:
            HTTPError.serviceUnavailable("\(error)", code: error.code)
        case .computeFailed:
            HTTPError(status: 500, message: "\(error)", type: "server_error", code: error.code)
        case .serverBusy(_, let retryAfter):
            HTTPError(
                status: 503, message: "\(error); retry in about \(retryAfter) s", type: "server_error",
                code: error.code, retryAfterSeconds: retryAfter)
        case .queueTimeout:
            HTTPError(
                status: 503, message: "\(error) (timeout_seconds passed before it started)", type: "server_error",
                code: error.code, param: "timeout_seconds")
        case .upstreamUnavailable(_, let retryAfter):
            HTTPError(
                status: 503, message: "\(error)", type: "server_error", code: error.code, retryAfterSeconds: retryAfter)
        case .upstreamRejected(let status, _) where [401, 403, 407].contains(status):
            // The upstream refused this server's credentials: not the client's fault.
            HTTPError(status: 502, message: "\(error)", type: "server_error", code: error.code)
        case .upstreamRejected(let status, _):
            HTTPError(status: status, message: "\(error)", type: "invalid_request_error", code: error.code)
        case .upstreamFailed:
            HTTPError(status: 502, message: "\(error)", type: "server_error", code: error.code)
        }
    }
}
