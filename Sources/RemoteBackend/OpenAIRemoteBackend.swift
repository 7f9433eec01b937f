import Backend
import Engine
import Foundation
import GenerationVocabulary
import Telemetry

/// A generation backend that runs nothing itself: it sends each generation to an
/// OpenAI-compatible upstream (vLLM, llama.cpp's server, another inferd) as a streamed chat or
/// text completion and turns the deltas into inferd's events (`started` at the response's first
/// byte, a `snapshot` with the whole answer so far for each delta). Sessions, queueing,
/// cancellation and the API surfaces above it stay inferd's. It keeps no KV cache, so a session
/// sends its whole transcript each turn.
///
/// Prompt length: the upstream tokenizes, so `prepare` can only estimate a conversation's or a
/// text's length for the context check before sending. The estimate is UTF-8 bytes / 2 (rounded
/// up) plus 8 tokens per message for the chat template's markup: English text runs at about 4
/// bytes a token in the common BPE vocabularies, so the estimate is about twice the real count
/// and a prompt it lets through almost always fits; one it refuses may have fitted (a 400 before
/// anything is sent). Token-id prompts are counted exactly. The upstream's own check stays the
/// final one (its 400 is passed on). Usage in results is the upstream's count.
public final class OpenAIRemoteBackend: GenerationBackend, UpstreamReporting {
    public let modelName: String
    public let modelAliases: Set<String>
    public let contextLength: Int
    public var architecture: String { "remote" }
    public var weightTypes: [String] { [] }
    /// Any id is sent on; the upstream checks it against its vocabulary.
    public var vocabularySize: Int { Int(Int32.max) }

    let settings: UpstreamSettings
    let logger: Logger
    let metrics: Metrics
    let dispatcher: UpstreamDispatcher
    /// Upstream health, driven by `startHealthChecks` and by requests that found one unreachable.
    let health: Locked<UpstreamHealth>
    private struct State {
        var shutDown = false
        var transfers: [ObjectIdentifier: HTTPTransfer] = [:]
        var checker: Task<Void, Never>?
    }
    private let state = Locked(State())

    /// Bytes of UTF-8 text counted as one token by the estimate (see the type's comment).
    public static let estimateBytesPerToken = 2
    /// Tokens counted for each message's chat-template markup.
    public static let estimateTokensPerMessage = 8

    /// A backend over `settings` whose model and context are already known (see `connect`).
    /// `metrics` receives `inferd_upstream_requests_total{upstream, outcome}`,
    /// `inferd_upstream_up{upstream}`, `inferd_upstream_active_generations{upstream}` and
    /// `inferd_upstream_health_checks_total{upstream, result}`. Health checks start with
    /// `startHealthChecks`.
    public init(
        settings: UpstreamSettings, modelName: String, contextLength: Int, logger: Logger, metrics: Metrics = Metrics()
    ) {
        self.settings = settings
        self.metrics = metrics
        self.modelName = modelName
        self.modelAliases = [modelName]
        self.contextLength = contextLength
        self.logger = logger
        let scheduler = UpstreamScheduler<UInt64>(
            upstreams: settings.endpoints.indices.map { (settings.endpoints[$0].weight, settings.maxActive($0)) },
            maxQueue: settings.maxQueue)
        dispatcher = UpstreamDispatcher(scheduler: scheduler)
        dispatcher.retryAfterWhenDown = max(1, Int(settings.health.interval.inSeconds.rounded(.up)))
        health = Locked(UpstreamHealth(count: settings.endpoints.count, policy: settings.health, now: .now))
        dispatcher.onChange = { [weak self] upstreams in self?.publishGauges(upstreams) }
        dispatcher.tell()
    }

    public var activeGenerations: Int { dispatcher.count }

    public var kvCache: (any KVCacheCapability)? { nil }
    /// Tools go upstream (`tools`, `tool_choice`, `parallel_tool_calls`, the history's tool turns);
    /// its calls come back as `generic` markup in the snapshots (`OpenAIStreamDecoder`).
    public var forwardsTools: Bool { true }

    /// Structured output is passed to the upstream (see `UpstreamFormat`), which samples.
    public func makeConstraint(grammar: CompiledGrammar, identity: String) -> (any GenerationConstraint)? {
        UpstreamFormat(identity: identity, grammar: grammar)
    }

    public func prepare(_ input: PromptInput) -> PreparedPrompt {
        switch input {
        case .tokens(let ids):
            return PreparedPrompt(input: input, tokenCount: ids.count)
        case .text(let text):
            return PreparedPrompt(input: input, tokenCount: Self.estimateTokens(bytes: text.utf8.count, messages: 0))
        case .conversation(let instructions, let messages, _):
            let bytes = (instructions?.utf8.count ?? 0) + messages.reduce(0) { $0 + $1.content.utf8.count }
            let count = messages.count + (instructions == nil ? 0 : 1)
            return PreparedPrompt(input: input, tokenCount: Self.estimateTokens(bytes: bytes, messages: count))
        }
    }

    static func estimateTokens(bytes: Int, messages: Int) -> Int {
        (bytes + estimateBytesPerToken - 1) / estimateBytesPerToken + messages * estimateTokensPerMessage
    }

    public func checkCapacity() throws(GenerationError) {
        if state.withLock({ $0.shutDown }) { throw .shuttingDown }
        let upstreams = dispatcher.upstreams
        guard upstreams.contains(where: \.up) else {
            throw .upstreamUnavailable("every upstream is down", retryAfterSeconds: dispatcher.retryAfterWhenDown)
        }
        let free = upstreams.contains { $0.up && $0.active < $0.maxActive }
        let waiting = dispatcher.waiting
        if !(free && waiting == 0) && waiting >= settings.maxQueue {
            throw .serverBusy(queueLength: waiting, retryAfterSeconds: 1)
        }
    }

    /// Starts the generation now, as the local engine does: the upstream request leaves while
    /// the caller still writes its response's head, instead of once it awaits the result (which
    /// put the head, the stream's set-up and a Task hop on the way to the upstream, the proxy's
    /// added time to first token). Events before the caller listens are its to keep (see
    /// `GenerationEventRelay`); the awaiting Task's cancellation stops the generation.
    public func submit(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration {
        let (path, body) = try Self.requestBody(request, model: modelName)
        let ticket = try enter(request, onEvent: onEvent)
        return Self.startNow { () async throws(GenerationError) -> GenerationResult in
            try await self.run(request, ticket: ticket, path: path, body: body, onEvent: onEvent)
        }
    }

    /// Runs `work` in a Task started at once; awaiting the result waits for it, and cancelling
    /// the awaiting Task cancels it. A pending generation dropped without being awaited cancels
    /// it too (as a local engine's ticket does), so nothing runs upstream for nobody.
    static func startNow(
        _ work: @escaping @Sendable () async throws(GenerationError) -> GenerationResult
    ) -> PendingGeneration {
        let started = StartedGeneration(
            Task { () async -> Result<GenerationResult, GenerationError> in
                do throws(GenerationError) {
                    return .success(try await work())
                } catch {
                    return .failure(error)
                }
            })
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            try await withTaskCancellationHandler {
                await started.task.value
            } onCancel: {
                started.task.cancel()
            }.get()
        }
    }

    /// Takes a place on an upstream or in the queue, or throws (busy, every upstream down, shut down).
    private func enter(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> UpstreamDispatcher.Ticket {
        if state.withLock({ $0.shutDown }) { throw .shuttingDown }
        return try dispatcher.enter(
            priority: request.priority, tenant: request.scope.tenant, deadline: request.deadline, onEvent: onEvent)
    }

    /// Stops admitting generations and cancels those running (their connections close).
    public func shutdown() {
        let (running, checker) = state.withLock { s in
            s.shutDown = true
            return (Array(s.transfers.values), s.checker)
        }
        checker?.cancel()
        dispatcher.close()
        for transfer in running { transfer.cancel() }
    }

    /// Keeps the health checks' Task, so `shutdown` ends it; false after shutdown.
    func keepChecker(_ task: Task<Void, Never>) -> Bool {
        state.withLock { s in
            guard !s.shutDown, s.checker == nil else { return false }
            s.checker = task
            return true
        }
    }

    func track(_ transfer: HTTPTransfer) -> Bool {
        state.withLock { s in
            guard !s.shutDown else { return false }
            s.transfers[ObjectIdentifier(transfer)] = transfer
            return true
        }
    }

    func untrack(_ transfer: HTTPTransfer) {
        _ = state.withLock { $0.transfers.removeValue(forKey: ObjectIdentifier(transfer)) }
    }

    /// Counts one exchange with `upstream` by how it ended: completed, cancelled, timeout,
    /// unreachable, unavailable (429/503), rejected (another 4xx) or failed.
    func count(_ upstream: Int, _ outcome: String) {
        metrics.counter(
            "inferd_upstream_requests_total", help: "Requests sent to each upstream, by how they ended.",
            labels: ["upstream": settings.endpoints[upstream].displayURL, "outcome": outcome]
        ).increment()
    }
}
