import Engine
import Telemetry

/// Single-flight over any backend: identical deterministic requests that arrive while one of
/// them is being generated share that one generation of the wrapped backend instead of computing
/// the same answer again. The server wraps its backend once (`single_flight`); a session's turns
/// go to the unwrapped one, since a request holding a session's KV sequence is never shared.
///
/// A request is shareable when `SingleFlightKey` says so (greedy or seeded, no deadline, no
/// session sequence). The first one starts a `SharedGeneration`, submitted to the wrapped backend
/// at once; identical ones arriving while it runs subscribe to it and are handed the latest
/// progress at once: snapshots hold the whole text so far, so a late subscriber loses nothing.
/// Every subscriber gets the shared result, marked with `sharedFrom` when it joined. Any other
/// request goes straight to the wrapped backend.
///
/// Cancellation keeps each request's contract: one that cancels while others remain finishes at
/// once as cancelled with what it was shown; the last one stops the generation and returns only
/// once the wrapped backend has stopped.
public final class SingleFlightBackend: GenerationBackend {
    /// The backend that computes (and that a session's turns use directly).
    public let wrapped: any GenerationBackend

    private struct Counts {
        var started = 0
        var joined = 0
        var unshared = 0
    }

    private let generations = Locked<[SingleFlightKey: SharedGeneration]>([:])
    private let counts = Locked(Counts())

    public init(wrapping backend: any GenerationBackend) {
        wrapped = backend
    }

    /// The wrapper over `backend`: the one already made for that instance while it lives, so
    /// every server over one backend shares its generations in flight (as the engine's own
    /// single-flight did), else a new one.
    public static func over(_ backend: any GenerationBackend) -> SingleFlightBackend {
        let id = ObjectIdentifier(backend as AnyObject)
        return wrappers.withLock { wrappers in
            if let existing = wrappers[id]?.wrapper { return existing }
            wrappers = wrappers.filter { $0.value.wrapper != nil }
            let wrapper = SingleFlightBackend(wrapping: backend)
            wrappers[id] = Weak(wrapper: wrapper)
            return wrapper
        }
    }

    /// A wrapper holds its backend, so while it lives no other object takes the backend's identity.
    private struct Weak {
        weak var wrapper: SingleFlightBackend?
    }
    private static let wrappers = Locked<[ObjectIdentifier: Weak]>([:])

    /// Requests that started a shared generation.
    public var startedCount: Int { counts.withLock { $0.started } }
    /// Requests served by joining a generation already in flight.
    public var joinedCount: Int { counts.withLock { $0.joined } }
    /// Requests that could not be shared and went to the wrapped backend on their own.
    public var unsharedCount: Int { counts.withLock { $0.unshared } }
    /// Shared generations currently running (or stopping).
    public var inFlightCount: Int { generations.withLock { $0.count } }

    public var modelName: String { wrapped.modelName }
    public var modelAliases: Set<String> { wrapped.modelAliases }
    public var architecture: String { wrapped.architecture }
    public var weightTypes: [String] { wrapped.weightTypes }
    public var weightResidency: WeightResidency? { wrapped.weightResidency }
    public var contextLength: Int { wrapped.contextLength }
    public var vocabularySize: Int { wrapped.vocabularySize }
    /// A shared generation counts once, as the wrapped backend runs it once.
    public var activeGenerations: Int { wrapped.activeGenerations }
    public var kvCache: (any KVCacheCapability)? { wrapped.kvCache }
    public var chatTemplateSource: String? { wrapped.chatTemplateSource }
    public var rendersTools: Bool { wrapped.rendersTools }
    public var computesLogprobs: Bool { wrapped.computesLogprobs }
    public var tokenizerAccess: (any TokenizerAccess)? { wrapped.tokenizerAccess }
    public var forwardsTools: Bool { wrapped.forwardsTools }

    public func prepare(_ input: PromptInput) throws(ChatTemplateError) -> PreparedPrompt {
        try wrapped.prepare(input)
    }

    public func checkCapacity() throws(GenerationError) {
        try wrapped.checkCapacity()
    }

    public func makeConstraint(grammar: CompiledGrammar, identity: String) -> (any GenerationConstraint)? {
        wrapped.makeConstraint(grammar: grammar, identity: identity)
    }

    public func reasoningBudget(_ budget: Int, startsInReasoning: Bool, inner: (any GenerationConstraint)?)
        -> (any GenerationConstraint)?
    {
        wrapped.reasoningBudget(budget, startsInReasoning: startsInReasoning, inner: inner)
    }

    public func shutdown() {
        wrapped.shutdown()
    }

    /// A shareable request joins the identical generation in flight (only capacity is checked
    /// for it), or starts one that the wrapped backend takes now (its refusal is thrown here).
    /// Any other request is the wrapped backend's `submit`.
    public func submit(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration {
        guard let key = SingleFlightKey(request) else {
            counts.withLock { $0.unshared += 1 }
            return try wrapped.submit(request, onEvent: onEvent)
        }
        try wrapped.checkCapacity()
        let outcome = SingleFlightMembership.Outcome()
        let promptTokens = request.prompt.tokenCount
        let (subscriber, generation, replay) = generations.withLock { running in
            if let existing = running[key] {
                let subscriber = SingleFlightSubscriber(
                    leaderLabel: existing.leaderLabel, promptTokens: promptTokens, onEvent: onEvent,
                    onFinish: outcome.fulfil)
                // Too late once its last subscriber left: it is stopping, so start afresh.
                if let progress = existing.join(subscriber) { return (subscriber, existing, Optional(progress)) }
            }
            let subscriber = SingleFlightSubscriber(
                leaderLabel: nil, promptTokens: promptTokens, onEvent: onEvent, onFinish: outcome.fulfil)
            let generation = SharedGeneration(leaderLabel: request.label, first: subscriber)
            running[key] = generation
            return (subscriber, generation, nil)
        }
        if let replay {
            counts.withLock { $0.joined += 1 }
            subscriber.deliver(replay)
        } else {
            counts.withLock { $0.started += 1 }
            try generation.start(request, on: wrapped) { [generations] in
                generations.withLock { running in
                    if running[key] === generation { running[key] = nil }
                }
            }
        }
        let membership = SingleFlightMembership(generation: generation, subscriber: subscriber, outcome: outcome)
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            try await membership.result()
        }
    }
}
