import Backend
import Engine
import Foundation
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
public final class OpenAIRemoteBackend: GenerationBackend {
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
    private struct State {
        var active = 0
        var next = 0
        var shutDown = false
        var transfers: [ObjectIdentifier: HTTPTransfer] = [:]
    }
    private let state = Locked(State())

    /// Bytes of UTF-8 text counted as one token by the estimate (see the type's comment).
    public static let estimateBytesPerToken = 2
    /// Tokens counted for each message's chat-template markup.
    public static let estimateTokensPerMessage = 8

    /// A backend over `settings` whose model and context are already known (see `connect`).
    /// `metrics` receives `inferd_upstream_requests_total{upstream, outcome}`.
    public init(
        settings: UpstreamSettings, modelName: String, contextLength: Int, logger: Logger, metrics: Metrics = Metrics()
    ) {
        self.settings = settings
        self.metrics = metrics
        self.modelName = modelName
        self.modelAliases = [modelName]
        self.contextLength = contextLength
        self.logger = logger
    }

    public var activeGenerations: Int { state.withLock { $0.active } }

    public var kvCache: (any KVCacheCapability)? { nil }

    public func prepare(_ input: PromptInput) -> PreparedPrompt {
        switch input {
        case .tokens(let ids):
            return PreparedPrompt(input: input, tokenCount: ids.count)
        case .text(let text):
            return PreparedPrompt(input: input, tokenCount: Self.estimateTokens(bytes: text.utf8.count, messages: 0))
        case .conversation(let instructions, let messages):
            let bytes = (instructions?.utf8.count ?? 0) + messages.reduce(0) { $0 + $1.content.utf8.count }
            let count = messages.count + (instructions == nil ? 0 : 1)
            return PreparedPrompt(input: input, tokenCount: Self.estimateTokens(bytes: bytes, messages: count))
        }
    }

    static func estimateTokens(bytes: Int, messages: Int) -> Int {
        (bytes + estimateBytesPerToken - 1) / estimateBytesPerToken + messages * estimateTokensPerMessage
    }

    private var capacity: Int { settings.maxActivePerUpstream * max(1, settings.baseURLs.count) }

    public func checkCapacity() throws(GenerationError) {
        let (active, shutDown) = state.withLock { ($0.active, $0.shutDown) }
        if shutDown { throw .shuttingDown }
        if active >= capacity { throw .serverBusy(queueLength: 0, retryAfterSeconds: 1) }
    }

    /// Takes a place, or throws as `checkCapacity` does.
    private func reserve() throws(GenerationError) {
        let refusal: GenerationError? = state.withLock { s in
            if s.shutDown { return .shuttingDown }
            if s.active >= capacity { return .serverBusy(queueLength: 0, retryAfterSeconds: 1) }
            s.active += 1
            return nil
        }
        if let refusal { throw refusal }
    }

    private func release() { state.withLock { $0.active -= 1 } }

    public func submit(
        _ request: BackendRequest, sharing: Bool, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration {
        try reserve()
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            defer { self.release() }
            return try await self.run(request, onEvent: onEvent)
        }
    }

    public func generate(
        _ request: BackendRequest, sharing: Bool, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) async throws(GenerationError) -> GenerationResult {
        try reserve()
        defer { release() }
        return try await run(request, onEvent: onEvent)
    }

    /// Stops admitting generations and cancels those running (their connections close).
    public func shutdown() {
        let running = state.withLock { s in
            s.shutDown = true
            return Array(s.transfers.values)
        }
        for transfer in running { transfer.cancel() }
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
    func count(_ upstream: String, _ outcome: String) {
        metrics.counter(
            "inferd_upstream_requests_total", help: "Requests sent to each upstream, by how they ended.",
            labels: ["upstream": upstream, "outcome": outcome]
        ).increment()
    }

    /// The upstream to try first: round robin over the configured ones.
    func firstUpstream() -> Int {
        state.withLock { s in
            let i = s.next % settings.baseURLs.count
            s.next = (s.next + 1) % settings.baseURLs.count
            return i
        }
    }
}
