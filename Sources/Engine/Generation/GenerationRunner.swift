import Synchronization
import Telemetry
import Timekeeping

/// Runs generations for one predictor on its worker thread.
///
/// `generate` is the whole contract with callers: it returns when the engine has really
/// stopped working on the request. If the calling Task is cancelled, generation stops within
/// one step and `generate` still waits for that step to end, then returns the partial result
/// with `finishReason == .cancelled`: cancellation is a stop, not an error.
public final class GenerationRunner: Sendable {
    public let predictor: any TokenPredictor
    private let worker: GenerationWorker
    private let makeDecoder: @Sendable () -> any IncrementalTextDecoder
    private let endOfGeneration: Set<Int32>

    public init(
        predictor: any TokenPredictor, endOfGeneration: Set<Int32>,
        makeDecoder: @escaping @Sendable () -> any IncrementalTextDecoder,
        admission: AdmissionPolicy = AdmissionPolicy(), metrics: Metrics = Metrics(), prefixCacheBytes: Int = 0,
        speculation: Speculation? = nil, clock: any TimeSource = .system
    ) {
        self.predictor = predictor
        // A predictor that can never copy a prefix gets no prefix cache: its finished sequences
        // would only hold memory.
        let prefixCacheTokens =
            predictor.copiesPrefixesExactly ? prefixCacheBytes / max(1, predictor.bytesPerSequenceToken) : 0
        self.worker = GenerationWorker(
            predictor: predictor, policy: admission, metrics: metrics, prefixCacheTokens: prefixCacheTokens,
            speculation: speculation,
            clock: clock)
        self.makeDecoder = makeDecoder
        self.endOfGeneration = endOfGeneration
    }

    deinit {
        worker.stop()
    }

    /// Generates an answer, reporting events through `onEvent` (called on the engine's thread,
    /// or on a cancelling one while the request waits: keep it quick and non-blocking).
    /// Throws `serverBusy` at once when too many requests already wait.
    public func generate(
        _ request: GenerationRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void = { _ in }
    ) async throws(GenerationError) -> GenerationResult {
        let ticket = try submit(request, cancelled: Task.isCancelled, onEvent: onEvent)
        return try await ticket.result()
    }

    /// Hands the request to the engine and returns at once: it runs, or waits for a place
    /// (reporting `.queued` events), or is refused (`serverBusy`, `shuttingDown`) before
    /// anything is computed. Await the ticket's `result()`.
    public func submit(
        _ request: GenerationRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void = { _ in }
    ) throws(GenerationError) -> GenerationTicket {
        try submit(request, cancelled: false, onEvent: onEvent)
    }

    /// Generations accepted and not yet ended, running or waiting for a place.
    public var activeGenerations: Int { worker.heldJobCount }

    /// Throws `serverBusy` when a request submitted now would be refused. For callers that must
    /// answer before they can submit; the later submission can still be refused (a race).
    public func checkCapacity() throws(GenerationError) {
        try worker.checkCapacity()
    }

    private func submit(
        _ request: GenerationRequest, cancelled: Bool, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> GenerationTicket {
        let outcome = GenerationTicket.Outcome()
        let job = GenerationJob(
            request: request, vocabularySize: predictor.vocabularySize, decoder: makeDecoder(),
            endOfGeneration: endOfGeneration, onEvent: onEvent, onFinish: { outcome.deliver($0) })
        // Already cancelled: it ends without taking a place or computing anything.
        if cancelled { job.cancel() }
        try worker.submit(job)
        return GenerationTicket(job: job, worker: worker, outcome: outcome)
    }

    /// The same generation as an async sequence of events ending with `.finished`.
    /// Ending the iteration early (or cancelling the iterating Task) cancels the generation.
    public func events(_ request: GenerationRequest) -> GenerationEvents {
        let (stream, continuation) = AsyncThrowingStream<GenerationStreamElement, Error>.makeStream()
        let job = GenerationJob(
            request: request, vocabularySize: predictor.vocabularySize, decoder: makeDecoder(),
            endOfGeneration: endOfGeneration,
            onEvent: { continuation.yield(.event($0)) },
            onFinish: { result in
                switch result {
                case .success(let r):
                    continuation.yield(.finished(r))
                    continuation.finish()
                case .failure(let e):
                    continuation.finish(throwing: e)
                }
            })
        let stop: @Sendable () -> Void = { [worker] in worker.cancel(job) }
        // A cancelled iterating Task ends the stream; a consumer that simply stops iterating
        // is noticed when its iterator goes away (the job keeps the stream itself alive).
        continuation.onTermination = { _ in stop() }
        do {
            try worker.submit(job)
        } catch {
            continuation.finish(throwing: error)
        }
        return GenerationEvents(stream: stream, abandon: AbandonToken(stop))
    }

    /// Stops the worker thread; jobs still running finish as cancelled.
    public func shutdown() {
        worker.stop()
    }
}
