import Telemetry

/// Identical deterministic requests that arrive while one of them is being generated share that
/// one generation ("single-flight") instead of computing the same answer again.
///
/// A request is shareable when `SingleFlightKey` says so (greedy or seeded, no session
/// sequence). The first one starts a `SharedGeneration`; identical ones arriving while it runs
/// subscribe to it and are handed the latest snapshot at once: snapshots hold the whole text so
/// far, so a late subscriber loses nothing. Every subscriber gets the shared result, marked with
/// `sharedFrom` when it joined.
///
/// Cancellation keeps the engine's contract for each request: one that cancels while others
/// remain finishes at once as cancelled with what it was shown; the last one stops the
/// generation and returns only once the engine has stopped.
public final class SingleFlight: Sendable {
    /// How a generation is actually computed (the engine's runner, counted or not).
    public typealias Run =
        @Sendable (GenerationRequest, @escaping @Sendable (GenerationEvent) -> Void) async throws(GenerationError) ->
        GenerationResult

    private struct Counts {
        var started = 0
        var joined = 0
        var unshared = 0
    }

    private let run: Run
    private let generations = Locked<[SingleFlightKey: SharedGeneration]>([:])
    private let counts = Locked(Counts())

    public init(run: @escaping Run) {
        self.run = run
    }

    public convenience init(runner: GenerationRunner) {
        self.init { request, onEvent throws(GenerationError) in try await runner.generate(request, onEvent: onEvent) }
    }

    /// Requests that started a shared generation.
    public var startedCount: Int { counts.withLock { $0.started } }
    /// Requests served by joining a generation already in flight.
    public var joinedCount: Int { counts.withLock { $0.joined } }
    /// Requests that could not be shared and ran on their own.
    public var unsharedCount: Int { counts.withLock { $0.unshared } }
    /// Shared generations currently running (or stopping).
    public var inFlightCount: Int { generations.withLock { $0.count } }

    /// Generates an answer, sharing it with identical requests in flight; the same contract as
    /// `GenerationRunner.generate`.
    public func generate(
        _ request: GenerationRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void = { _ in }
    ) async throws(GenerationError) -> GenerationResult {
        guard let key = SingleFlightKey(request) else {
            counts.withLock { $0.unshared += 1 }
            return try await run(request, onEvent)
        }
        let membership = Locked<(SingleFlightSubscriber, SharedGeneration)?>(nil)
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<GenerationResult, GenerationError>, Never>) in
                let joined = subscribe(
                    key: key, request: request, onEvent: onEvent, onFinish: { continuation.resume(returning: $0) })
                membership.withLock { $0 = joined }
                if Task.isCancelled { joined.1.leave(joined.0) }
            }
        } onCancel: {
            if let (subscriber, generation) = membership.withLock({ $0 }) { generation.leave(subscriber) }
        }
        return try outcome.get()
    }

    /// Joins the generation in flight for `key`, or starts one.
    func subscribe(
        key: SingleFlightKey, request: GenerationRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void,
        onFinish: @escaping @Sendable (Result<GenerationResult, GenerationError>) -> Void
    ) -> (SingleFlightSubscriber, SharedGeneration) {
        let promptTokens = request.promptTokens.count
        let (subscriber, generation, replay) = generations.withLock { running in
            if let existing = running[key] {
                let subscriber = SingleFlightSubscriber(
                    leaderLabel: existing.leaderLabel, promptTokens: promptTokens, onEvent: onEvent, onFinish: onFinish)
                // Too late once its last subscriber left: it is stopping, so start afresh.
                if let progress = existing.join(subscriber) { return (subscriber, existing, Optional(progress)) }
            }
            let subscriber = SingleFlightSubscriber(
                leaderLabel: nil, promptTokens: promptTokens, onEvent: onEvent, onFinish: onFinish)
            let generation = SharedGeneration(leaderLabel: request.label, first: subscriber)
            running[key] = generation
            return (subscriber, generation, nil)
        }
        if let replay {
            counts.withLock { $0.joined += 1 }
            subscriber.deliver(replay)
        } else {
            counts.withLock { $0.started += 1 }
            generation.start(request, run: run) { [generations] in
                generations.withLock { running in
                    if running[key] === generation { running[key] = nil }
                }
            }
        }
        return (subscriber, generation)
    }

    /// A generation of its own for a request that cannot be shared, with the same fan-out
    /// machinery (one subscriber), so `events` has a single path.
    func runAlone(
        _ request: GenerationRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void,
        onFinish: @escaping @Sendable (Result<GenerationResult, GenerationError>) -> Void
    ) -> (SingleFlightSubscriber, SharedGeneration) {
        counts.withLock { $0.unshared += 1 }
        let subscriber = SingleFlightSubscriber(
            leaderLabel: nil, promptTokens: request.promptTokens.count, onEvent: onEvent, onFinish: onFinish)
        let generation = SharedGeneration(leaderLabel: request.label, first: subscriber)
        generation.start(request, run: run) {}
        return (subscriber, generation)
    }
}
