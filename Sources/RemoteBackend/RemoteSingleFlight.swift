import Backend
import Foundation
import GenerationVocabulary
import Telemetry

/// Single-flight over a remote engine: identical deterministic generations in flight share one
/// upstream request. The key is the upstream request itself (path and body), so two requests share
/// only when the upstream would be asked exactly the same thing; only greedy or seeded ones
/// without a deadline are shared (the local engine's rule: a deadline must end its own request).
///
/// The shared generation runs in a Task this object owns (no HTTP request owns it, since any of
/// them may leave while others stay). A subscriber that joins late is brought up to date with the
/// latest `started`/`queued` event and snapshot (snapshots hold the whole text so far). One that
/// cancels while others remain finishes at once as cancelled with what it was shown; the last one
/// cancels the upstream request and returns once it has stopped.
final class RemoteSingleFlight: Sendable {
    typealias Run =
        @Sendable (@escaping @Sendable (GenerationEvent) -> Void) async throws(GenerationError) -> GenerationResult

    private let flights = Locked<[String: Flight]>([:])
    private let counts = Locked((started: 0, joined: 0))

    /// Requests that started a shared generation, and those that joined one in flight.
    var startedCount: Int { counts.withLock { $0.started } }
    var joinedCount: Int { counts.withLock { $0.joined } }

    /// The key for a request, or nil when it must run on its own.
    static func key(_ request: BackendRequest, path: String, body: Data) -> String? {
        let s = request.sampling
        guard request.deadline == nil, request.sequence == nil, s.temperature == 0 || s.seed != nil else { return nil }
        return "\(request.priority) \(path) " + String(decoding: body, as: UTF8.self)
    }

    /// Joins the generation in flight for `key`, or starts one with `run`.
    func generate(
        key: String, label: String, promptTokens: Int, run: @escaping Run,
        onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) async -> Result<GenerationResult, GenerationError> {
        let membership = Locked<(Flight, UInt64)?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation {
                (c: CheckedContinuation<Result<GenerationResult, GenerationError>, Never>) in
                let subscriber = Flight.Subscriber(onEvent: onEvent, promptTokens: promptTokens, finish: c)
                let (flight, id, fresh) = flights.withLock { running -> (Flight, UInt64, Bool) in
                    if let existing = running[key], let id = existing.join(subscriber) { return (existing, id, false) }
                    let flight = Flight(leaderLabel: label)
                    let id = flight.join(subscriber)!
                    running[key] = flight
                    return (flight, id, true)
                }
                counts.withLock { fresh ? ($0.started += 1) : ($0.joined += 1) }
                membership.withLock { $0 = (flight, id) }
                if fresh {
                    flight.start(run) { [flights] in
                        flights.withLock { running in
                            if running[key] === flight { running[key] = nil }
                        }
                    }
                }
                if Task.isCancelled { flight.leave(id) }
            }
        } onCancel: {
            if let (flight, id) = membership.withLock({ $0 }) { flight.leave(id) }
        }
    }
}

/// One shared upstream generation and the requests waiting on it.
final class Flight: Sendable {
    struct Subscriber: Sendable {
        let onEvent: @Sendable (GenerationEvent) -> Void
        let promptTokens: Int
        let finish: CheckedContinuation<Result<GenerationResult, GenerationError>, Never>
        /// The latest snapshot this subscriber was shown.
        var shown: (content: String, tokens: Int) = ("", 0)
        /// It joined a flight already running (its result names the leader).
        var joined = false
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
        /// The latest `queued` or `started` event, and the latest snapshot.
        var phase: GenerationEvent?
        var snapshot: GenerationEvent?
        /// No one may join: the last subscriber left, or the generation ended.
        var closed = false
        var task: Task<Void, Never>?
    }

    private let state = Locked(State())
    /// The label (request id) of the request that started it.
    let leaderLabel: String

    init(leaderLabel: String) { self.leaderLabel = leaderLabel }

    /// Adds a subscriber, brought up to date; nil when the flight no longer takes any.
    func join(_ subscriber: Subscriber) -> UInt64? {
        let (id, replay): (UInt64?, [GenerationEvent]) = state.withLock { s in
            guard !s.closed else { return (nil, []) }
            s.nextID += 1
            var sub = subscriber
            sub.joined = s.nextID > 1
            if case .snapshot(let content, let tokens) = s.snapshot { sub.shown = (content, tokens) }
            s.subscribers[s.nextID] = sub
            return (s.nextID, [s.phase, s.snapshot].compactMap { $0 })
        }
        for event in replay { subscriber.onEvent(event) }
        return id
    }

    func start(_ run: @escaping RemoteSingleFlight.Run, onEnd: @escaping @Sendable () -> Void) {
        let task = Task {
            let outcome: Result<GenerationResult, GenerationError>
            do throws(GenerationError) {
                outcome = .success(try await run { [self] event in publish(event) })
            } catch {
                outcome = .failure(error)
            }
            onEnd()
            let finishing = state.withLock { s in
                s.closed = true
                defer { s.subscribers.removeAll() }
                return Array(s.subscribers.values)
            }
            for subscriber in finishing {
                guard subscriber.joined, case .success(var result) = outcome else {
                    subscriber.finish.resume(returning: outcome)
                    continue
                }
                result.sharedFrom = leaderLabel
                subscriber.finish.resume(returning: .success(result))
            }
        }
        let cancelNow = state.withLock { s in
            s.task = task
            return s.closed  // every subscriber already left
        }
        if cancelNow { task.cancel() }
    }

    private func publish(_ event: GenerationEvent) {
        let subscribers = state.withLock { s -> [Subscriber] in
            switch event {
            case .snapshot(let content, let tokens):
                s.snapshot = event
                for id in s.subscribers.keys { s.subscribers[id]?.shown = (content, tokens) }
            case .queued, .started:
                s.phase = event
            }
            return Array(s.subscribers.values)
        }
        for subscriber in subscribers { subscriber.onEvent(event) }
    }

    /// A subscriber's request was cancelled: alone, it stops the generation (and is told once
    /// that has ended); otherwise it finishes now as cancelled with what it was shown.
    func leave(_ id: UInt64) {
        enum Departure {
            case gone
            case alone(Subscriber)
            case last(Task<Void, Never>?)
        }
        let departure: Departure = state.withLock { s in
            guard let subscriber = s.subscribers[id] else { return .gone }
            if s.subscribers.count > 1 {
                s.subscribers[id] = nil
                return .alone(subscriber)
            }
            s.closed = true
            return .last(s.task)
        }
        switch departure {
        case .gone: break
        case .alone(let subscriber):
            subscriber.finish.resume(
                returning: .success(
                    GenerationResult(
                        content: subscriber.shown.content, finishReason: .cancelled,
                        usage: GenerationUsage(
                            promptTokens: subscriber.promptTokens, completionTokens: subscriber.shown.tokens,
                            cachedTokens: 0),
                        timings: GenerationTimings(
                            promptMilliseconds: 0, generationMilliseconds: 0, promptTokensPerSecond: 0,
                            generationTokensPerSecond: 0),
                        tokens: [], stepsAfterCancel: 0)))
        case .last(let task): task?.cancel()
        }
    }
}
