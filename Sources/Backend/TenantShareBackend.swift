import Engine
import GenerationVocabulary
import Telemetry
import Timekeeping

/// Fair shares over any backend, local or remote: a tenant (the request's `scope.tenant`, an API
/// key's owner) holds at most `limit` generations at once, counted from `submit` until its
/// `result()` returns (or the pending generation is dropped); one more is refused with
/// `tenantBusy` before anything reaches the wrapped backend, so one key can never take every
/// running and waiting place. Which waiting generation runs next is the backend's own fair
/// queue (`AdmissionQueue`, `UpstreamScheduler`).
///
/// The host makes one for stateless generations (under `SingleFlightBackend`, so a request that
/// joins an identical generation in flight, which takes no place, is not counted) and one over
/// the same counts for a session's turns (`sharing(_:)`), so both count against one share.
public final class TenantShareBackend: GenerationBackend {
    public let wrapped: any GenerationBackend
    private let shares: Locked<TenantShares>
    private let clock: any TimeSource

    /// `limit`: most generations one tenant holds at once (0: no limit; the tenant "" is never
    /// limited). `clock` measures how long generations are held, for `Retry-After`.
    public init(wrapping backend: any GenerationBackend, limit: Int, clock: any TimeSource = .system) {
        wrapped = backend
        shares = Locked(TenantShares(limit: limit))
        self.clock = clock
    }

    private init(wrapping backend: any GenerationBackend, shares: Locked<TenantShares>, clock: any TimeSource) {
        wrapped = backend
        self.shares = shares
        self.clock = clock
    }

    /// A wrapper over `backend` that counts against the same shares as this one.
    public func sharing(_ backend: any GenerationBackend) -> TenantShareBackend {
        TenantShareBackend(wrapping: backend, shares: shares, clock: clock)
    }

    public var limit: Int { shares.withLock { $0.limit } }
    /// Generations `tenant` holds now.
    public func holding(_ tenant: String) -> Int { shares.withLock { $0.holding(tenant) } }

    /// Throws `tenantBusy` when `tenant` holds its share already (for callers that must answer
    /// before they submit, as a session's turn does before its stream starts).
    public func checkShare(of tenant: String) throws(GenerationError) {
        try shares.withLock { s in Result { () throws(GenerationError) in try s.check(tenant) } }.get()
    }

    public var modelName: String { wrapped.modelName }
    public var modelAliases: Set<String> { wrapped.modelAliases }
    public var architecture: String { wrapped.architecture }
    public var weightTypes: [String] { wrapped.weightTypes }
    public var weightResidency: WeightResidency? { wrapped.weightResidency }
    public var contextLength: Int { wrapped.contextLength }
    public var vocabularySize: Int { wrapped.vocabularySize }
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

    /// Counts the generation against its tenant (or refuses it, `tenantBusy`), then hands it to
    /// the wrapped backend; a refusal there gives the place back at once.
    public func submit(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration {
        let tenant = request.scope.tenant
        try shares.withLock { s in Result { () throws(GenerationError) in try s.acquire(tenant) } }.get()
        let hold = Hold(tenant: tenant, shares: shares, clock: clock)
        let pending: PendingGeneration
        do {
            pending = try wrapped.submit(request, onEvent: onEvent)
        } catch {
            hold.end()
            throw error
        }
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            defer { hold.end() }
            return try await pending.result()
        }
    }

    /// One counted generation: given back once, when its result is in or when nobody can await
    /// it any more (the pending generation was dropped, which stops it in the wrapped backend).
    private final class Hold: Sendable {
        let tenant: String
        let shares: Locked<TenantShares>
        let clock: any TimeSource
        let start: ContinuousClock.Instant
        let ended = Locked(false)

        init(tenant: String, shares: Locked<TenantShares>, clock: any TimeSource) {
            self.tenant = tenant
            self.shares = shares
            self.clock = clock
            start = clock.now
        }

        deinit { end() }

        func end() {
            let first = ended.withLock { e in
                defer { e = true }
                return !e
            }
            guard first else { return }
            let held = clock.now - start
            shares.withLock { $0.release(tenant, held: held) }
        }
    }
}
