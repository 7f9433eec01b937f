import Backend
import Engine
import Foundation
import Sessions
import Synchronization
import Telemetry
import TestSupport

/// A tiny deterministic model for session tests, run by the real `GenerationRunner` (so
/// cancellation, prefix reuse and "returns only once stopped" are the engine's own).
///
/// Tokens are bytes plus markers: 1 system, 3 user, 255 assistant (also the generation cue),
/// 2 end of message, 256 end of generation. After the last 255 it answers `reply`, byte by byte,
/// then ends. A prompt containing "FAIL" makes the compute step throw (a genuine engine failure).
final class FakePredictor: TokenPredictor, @unchecked Sendable {
    static let end: Int32 = 256
    let reply: [UInt8]
    let stepDelay: Double
    let vocabularySize = 257
    let contextLength: Int
    /// Tokens run through the model so far (prompt chunks and generated tokens).
    let computed = Atomic<Int>(0)
    /// The sequence of each compute step, in order: two generations that overlap interleave here.
    let steps = Locked<[ObjectIdentifier]>([])

    init(reply: String, contextLength: Int = 4096, stepDelay: Double = 0.002) {
        self.reply = Array(reply.utf8)
        self.contextLength = contextLength
        self.stepDelay = stepDelay
    }

    final class Sequence: PredictorSequence, @unchecked Sendable {
        let capacity: Int
        var tokens: [Int32] = []
        init(capacity: Int) { self.capacity = capacity }
        var count: Int { tokens.count }
        func truncate(to length: Int) { tokens.removeSubrange(min(max(0, length), tokens.count)...) }
    }

    func makeSequence(capacity: Int) -> any PredictorSequence { Sequence(capacity: capacity) }

    func predict(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        computed.add(tokens.count, ordering: .relaxed)
        steps.withLock { $0.append(ObjectIdentifier(sequence)) }
        if stepDelay > 0 { Thread.sleep(forTimeInterval: stepDelay) }
        let seq = sequence as! Sequence
        guard seq.tokens.count + tokens.count <= seq.capacity else { throw GenerationError.computeFailed("overflow") }
        if String(decoding: (seq.tokens + tokens).compactMap { $0 < 256 ? UInt8($0) : nil }, as: UTF8.self).contains(
            "FAIL")
        {
            throw GenerationError.computeFailed("the fake model was told to fail")
        }
        seq.tokens += tokens
        let lastCue = seq.tokens.lastIndex(of: 255) ?? -1
        let produced = seq.tokens.count - lastCue - 1
        for i in 0..<logits.count { logits[i] = 0 }
        logits[produced < reply.count ? Int(reply[produced]) : Int(Self.end)] = 10
    }
}

struct ByteTextDecoder: IncrementalTextDecoder {
    var pending: [UInt8] = []
    func bytes(of id: Int32) -> [UInt8] { id < 256 ? [UInt8(id)] : [] }
    mutating func append(_ id: Int32) -> String {
        guard id < 256 else { return "" }
        pending.append(UInt8(id))
        if let s = String(validating: pending, as: UTF8.self) {
            pending.removeAll()
            return s
        }
        return ""
    }
}

final class FakeModel: GenerationBackend, KVCacheCapability {
    let predictor: FakePredictor
    let runner: GenerationRunner

    init(
        reply: String = "The quick brown fox jumps over the lazy dog.", contextLength: Int = 4096,
        stepDelay: Double = 0.002, admission: AdmissionPolicy = AdmissionPolicy()
    ) {
        predictor = FakePredictor(reply: reply, contextLength: contextLength, stepDelay: stepDelay)
        runner = GenerationRunner(
            predictor: predictor, endOfGeneration: [FakePredictor.end], makeDecoder: { ByteTextDecoder() },
            admission: admission)
    }

    deinit { runner.shutdown() }

    let modelName = "fake"
    var modelAliases: Set<String> { [modelName] }
    let architecture = "fake"
    let weightTypes = ["F32"]
    var vocabularySize: Int { predictor.vocabularySize }
    var activeGenerations: Int { runner.activeGenerations }
    var contextLength: Int { predictor.contextLength }
    var kvBytesPerToken: Int { 1024 }
    var kvCache: (any KVCacheCapability)? { self }

    /// The same prompt spelling as the scripted backend's (bytes plus role markers).
    func prepare(_ input: PromptInput) -> PreparedPrompt {
        PreparedPrompt(input: input, tokens: ScriptedBackend.render(input))
    }

    func makeSequence(capacity: Int) -> any PredictorSequence { predictor.makeSequence(capacity: capacity) }

    func checkCapacity() throws(GenerationError) { try runner.checkCapacity() }

    func submit(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration {
        let ticket = try runner.submit(Self.tokenLevel(request), onEvent: onEvent)
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in try await ticket.result() }
    }

    /// The runner's request: the ids `prepare` rendered.
    static func tokenLevel(_ r: BackendRequest) -> GenerationRequest {
        var request = GenerationRequest(
            promptTokens: r.prompt.tokens ?? [], maxTokens: r.maxTokens, sampling: r.sampling, stop: r.stop,
            sequence: r.sequence, label: r.label)
        request.ignoreEndOfGeneration = r.ignoreEndOfGeneration
        request.priority = r.priority
        request.deadline = r.deadline
        return request
    }

    func shutdown() { runner.shutdown() }
}

/// Everything a requester was told, in order.
final class Recorder: Sendable {
    let events = Locked<[GenerationEvent]>([])
    func record(_ e: GenerationEvent) { events.withLock { $0.append(e) } }
    var snapshots: [String] {
        events.withLock { $0.compactMap { if case .snapshot(let c, _) = $0 { c } else { nil } } }
    }
    var positions: [Int] {
        events.withLock { $0.compactMap { if case .queued(let p) = $0 { p } else { nil } } }
    }
    var started: Bool { events.withLock { $0.contains { if case .started = $0 { true } else { false } } } }
}

struct Harness {
    let manager: SessionManager
    let model: FakeModel
    /// What the sessions generate with: `model` unless a test gives another backend.
    let backend: any GenerationBackend
    let logs = LogCapture()

    init(
        model: FakeModel = FakeModel(), backend: (any GenerationBackend)? = nil, maxQueue: Int = 16,
        budgetBytes: Int = 1 << 30,
        store: any SessionStore = TranscriptStore.inMemory(), hooks: SessionHooks = SessionHooks(),
        recentRequests: Int = SessionManager.defaultRecentRequests
    ) throws {
        self.model = model
        self.backend = backend ?? model
        let env = SessionEnvironment(
            store: store, caches: KVCacheBudget(budgetBytes: budgetBytes), maxQueue: maxQueue,
            limits: GenerationLimits(defaultMaxTokens: 64),
            logger: logs.logger, metrics: Metrics(), hooks: hooks)
        manager = try SessionManager(environment: env, recentRequests: recentRequests)
    }

    func session(instructions: String? = "Be brief.", onBusy: BusyPolicy = .queue) async throws -> Session {
        try await manager.create(instructions: instructions, onBusy: onBusy, options: nil)
    }

    static func request(
        _ id: String, _ prompt: String = "hello", maxTokens: Int = 8, onBusy: BusyPolicy = .queue,
        onCancel: CancelPolicy = .keep, priority: TurnPriority = .interactive, longRun: Bool = false,
        deadline: ContinuousClock.Instant? = nil
    ) -> TurnRequest {
        TurnRequest(
            id: id, prompt: prompt, onBusy: onBusy, onCancel: onCancel, priority: priority,
            parameters: TurnParameters(maxTokens: maxTokens, sampling: .greedy, ignoreEndOfGeneration: longRun),
            deadline: deadline)
    }

    func admit(_ r: TurnRequest, _ s: Session) async throws {
        try await manager.admit(r, to: s, backend: backend)
    }

    /// Admits, then runs in a Task of its own (the "HTTP request Task"); cancelling that Task is a disconnect.
    func start(_ r: TurnRequest, _ s: Session, _ rec: Recorder = Recorder()) async throws -> Task<TurnOutcome, Never> {
        try await admit(r, s)
        return Task { await s.run(r.id, observer: rec.record, cancelReason: { .clientDisconnected }) }
    }

    func respond(_ r: TurnRequest, _ s: Session, _ rec: Recorder = Recorder()) async throws -> TurnOutcome {
        try await admit(r, s)
        return await s.run(r.id, observer: rec.record, cancelReason: { .clientDisconnected })
    }
}

extension Session {
    func responses() async -> [TranscriptEntry] { transcript.filter { $0.kind == .response } }
    func prompts() async -> [TranscriptEntry] { transcript.filter { $0.kind == .prompt } }
}
