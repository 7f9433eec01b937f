import Backend
import Cancellation
import Engine
import Foundation
import HTTPServer
import Sessions
import Telemetry
import Timekeeping

/// The one path every generation takes, whatever its wire format and whether it is stateless or a
/// session's turn: limits checked against one `GenerationLimits`, submission to the
/// `GenerationBackend` (shared by `SingleFlightBackend` or queued, with priority and deadline) or to the session's
/// queue, then one `GenerationOutcome`, counted by the same metrics and logged by the same
/// `generation finished` line. Routes translate their wire format to and from it; none of them
/// repeats a limit check, a metric or an error mapping.
final class GenerationService: Sendable {
    let limits: GenerationLimits
    let logger: Logger
    let metrics: Metrics
    /// Where a request's arrival, its deadline and its latencies are read.
    let clock: any TimeSource

    init(configuration: ServerConfiguration, logger: Logger, metrics: Metrics, clock: any TimeSource = .system) {
        limits = configuration.generationLimits
        self.logger = logger
        self.metrics = metrics
        self.clock = clock
    }

    /// A request's arrival: its deadline (`timeout_seconds`) and latencies count from here.
    var now: ContinuousClock.Instant { clock.now }

    /// The prompt the backend runs for `input` (a conversation through its chat template); a
    /// template that refuses it is 400 `invalid_request`.
    func prepare(_ backend: any GenerationBackend, _ input: PromptInput) throws(HTTPError) -> PreparedPrompt {
        do {
            return try backend.prepare(input)
        } catch {
            throw HTTPError(error)
        }
    }

    /// Validates options and the context budget before anything is computed or streamed. Every
    /// error names its field as `names` spells it for the caller's wire format. The request is
    /// labelled with `request`'s id and scoped to its API key's owner and `cacheSalt` (reuse of
    /// kept prefixes and merged generations stays within that scope).
    func makeRequest(
        prompt: PreparedPrompt, options: GenerationOptionsBody?, backend: any GenerationBackend,
        for request: HTTPRequest, cacheSalt: String? = nil, names: FieldNames = .native
    ) throws(HTTPError) -> BackendRequest {
        let o = options ?? GenerationOptionsBody()
        let (sampling, stop) = try o.validatedSamplingAndStop(names: names)
        let maxTokens: Int
        do {
            maxTokens = try limits.admit(
                promptTokens: prompt.tokenCount, requestedMaxTokens: o.maxTokens, contextLength: backend.contextLength)
        } catch {
            throw HTTPError(error, names: names)
        }
        var generation = BackendRequest(
            prompt: prompt, maxTokens: maxTokens, sampling: sampling, stop: stop, label: request.id)
        generation.scope = GenerationScope(
            tenant: request.context.value(AccessControl.ContextKey.owner) ?? "", cacheSalt: cacheSalt)
        generation.ignoreEndOfGeneration = o.ignoreEos ?? false
        generation.constraint = try o.format?.constraint(backend: backend)
        return generation
    }

    /// Hands a stateless generation to the backend now (a full queue is 503 `server_busy` with
    /// `Retry-After`, before any stream starts) and returns it to be run. A request that joins an
    /// identical generation in flight (the host's `SingleFlightBackend`) is only checked for
    /// capacity here. `route` and `arrival` label and
    /// start the request's latency histograms; `reason` says why it stopped if it is cancelled.
    func admit(
        _ generation: BackendRequest, backend: any GenerationBackend, requestID: String, route: String,
        arrival: ContinuousClock.Instant, reason: @escaping @Sendable () -> CancellationReason?
    ) throws(HTTPError) -> AdmittedGeneration {
        let latency = RequestLatency(
            metrics: metrics, route: route, priority: generation.priority, arrival: arrival, clock: clock)
        let relay = GenerationEventRelay()
        let pending: PendingGeneration
        do {
            pending = try backend.submit(generation) { event in
                latency.observe(event)
                relay.forward(event)
            }
        } catch {
            latency.finish(promptMilliseconds: nil)
            throw recordFailure(error, requestID: requestID)
        }
        return AdmittedGeneration(requestID: requestID) { [self] observer in
            relay.attach(observer)
            let outcome: GenerationOutcome
            do throws(GenerationError) {
                outcome = GenerationOutcome(try await pending.result(), reason: reason)
            } catch {
                latency.finish(promptMilliseconds: nil)
                return GenerationOutcome(failure: recordFailure(error, requestID: requestID))
            }
            latency.finish(promptMilliseconds: outcome.timings?.promptMilliseconds)
            record(outcome, requestID: requestID)
            return outcome
        }
    }

    /// A turn admitted to `session`'s queue, run when its turn comes (the session owns the KV
    /// cache, the transcript and the busy policy); counted and logged as any generation.
    func turn(
        _ turnID: String, of session: Session, route: String, priority: GenerationPriority,
        arrival: ContinuousClock.Instant, reason: @escaping @Sendable () -> CancellationReason
    ) -> AdmittedGeneration {
        let latency = RequestLatency(
            metrics: metrics, route: route, priority: priority, arrival: arrival, clock: clock)
        return AdmittedGeneration(requestID: turnID) { [self] observer in
            let turn = await session.run(
                turnID,
                observer: { event in
                    latency.observe(event)
                    observer(event)
                }, cancelReason: reason)
            latency.finish(promptMilliseconds: turn.timings?.promptMilliseconds)
            let outcome = GenerationOutcome(turn)
            switch (outcome.status, turn.error) {
            case (.failed, .generation(let e)?): _ = recordFailure(e, requestID: turnID)
            case (.failed, let e): countFailure(requestID: turnID, error: e.map { "\($0)" } ?? "unknown")
            default: record(outcome, requestID: turnID)
            }
            return outcome
        }
    }

    /// Logs and counts a generation that ended without a result; returns the error to answer.
    /// A full queue or a timeout while waiting is load, not a failure: counted by the engine's
    /// own series and logged at info.
    func recordFailure(_ error: GenerationError, requestID: String) -> HTTPError {
        let answer = HTTPError(error)
        switch error {
        case .serverBusy, .queueTimeout, .upstreamUnavailable:
            logger.info("generation refused", ["request_id": requestID, "code": answer.code.rawValue])
        case .tenantBusy:
            // Load of one key, not a failure: counted on its own, so a key at its share shows.
            metrics.counter(
                "inferd_key_busy_total",
                help: "Generations refused because their API key already held its share (per_key_max_generations)."
            ).increment()
            logger.info("generation refused", ["request_id": requestID, "code": answer.code.rawValue])
        default:
            countFailure(requestID: requestID, error: "\(error)")
        }
        return answer
    }

    private func countFailure(requestID: String, error: String) {
        metrics.counter(
            "inferd_generations_total", help: "Generations by how they ended.", labels: ["finish_reason": "error"]
        ).increment()
        logger.warning("generation failed", ["request_id": requestID, "error": error])
    }

    /// Counts a finished generation (the `inferd_generations_total` series last, so whoever sees
    /// it has every other series of this generation already) and logs it.
    func record(_ outcome: GenerationOutcome, requestID: String) {
        let finishReason = (outcome.finishReason ?? .cancelled).rawValue
        metrics.counter(
            "inferd_generation_steps_after_cancel_total",
            help: "Decode steps a generation took after its request was cancelled (0 or 1 when it stops at once)."
        ).increment(by: Double(outcome.stepsAfterCancel))
        metrics.counter("inferd_prompt_tokens_total", help: "Prompt tokens received.")
            .increment(by: Double(outcome.usage.promptTokens))
        metrics.counter("inferd_prompt_tokens_cached_total", help: "Prompt tokens reused from a KV cache.")
            .increment(by: Double(outcome.usage.cachedTokens))
        metrics.counter("inferd_completion_tokens_total", help: "Tokens generated.")
            .increment(by: Double(outcome.usage.completionTokens))
        metrics.counter(
            "inferd_generations_total", help: "Generations by how they ended.", labels: ["finish_reason": finishReason]
        ).increment()
        if let leader = outcome.sharedFrom {
            singleFlightJoins.increment()
            logger.info(
                "request joined an identical generation",
                ["request_id": requestID, "leader_request_id": leader, "finish_reason": finishReason])
        }
        logger.info(
            "generation finished",
            [
                "request_id": requestID, "finish_reason": finishReason,
                "prompt_tokens": "\(outcome.usage.promptTokens)", "cached_tokens": "\(outcome.usage.cachedTokens)",
                "completion_tokens": "\(outcome.usage.completionTokens)",
                "tokens_per_second": String(format: "%.1f", outcome.timings?.generationTokensPerSecond ?? 0),
                "steps_after_cancel": "\(outcome.stepsAfterCancel)",
            ])
    }

    /// Requests served by joining an identical generation in flight.
    var singleFlightJoins: Counter {
        metrics.counter(
            "inferd_single_flight_joined_total",
            help: "Requests served by joining an identical deterministic generation already in flight.")
    }
}
