import Backend
import Engine
import Telemetry

/// A backend with no model, for tests where the model is not the subject: every generation
/// plays the steps its script gives for the request (events, pauses, an end), and stops at the
/// next step once its Task is cancelled. It keeps no KV caches, so sessions over it rebuild each
/// turn from the transcript.
///
/// Prompts are bytes plus markers, as `render` spells them: 1 system, 3 user, 255 assistant
/// (also the cue for the answer), 2 end of message.
public final class ScriptedBackend: GenerationBackend {
    public enum Step: Sendable {
        /// The visible answer becomes `content` (one more completion token).
        case text(String)
        /// Reported as it is.
        case event(GenerationEvent)
        /// Waits (a cancellation ends the wait).
        case pause(Duration)
        /// Waits until `wait` returns (a test's gate: the generation is held there until opened).
        case hold(@Sendable () async -> Void)
        /// Ends with this reason and the answer so far.
        case finish(FinishReason)
        /// Ends with this error.
        case fail(GenerationError)
    }

    public let modelName: String
    public var modelAliases: Set<String> { [modelName] }
    public let architecture = "scripted"
    public let weightTypes: [String] = []
    public let contextLength: Int
    public let vocabularySize = 256
    public var kvCache: (any KVCacheCapability)? { nil }

    /// A chat template's source to report (tool calling reads the call format from it). With
    /// one, constraints are accepted but not applied: the script decides the text, so a test can
    /// play a model's answer through the parsing of a format.
    public let chatTemplateSource: String?

    private let script: @Sendable (BackendRequest) -> [Step]
    private let maxActive: Int
    private let state = Locked(State())

    private struct State {
        var active = 0
        var requests: [BackendRequest] = []
        var shutDown = false
    }

    /// `script` gives each request its steps; more than `maxActive` generations at once is
    /// `serverBusy`.
    public init(
        modelName: String = "scripted", contextLength: Int = 8192, maxActive: Int = 64,
        chatTemplateSource: String? = nil, script: @escaping @Sendable (BackendRequest) -> [Step]
    ) {
        self.modelName = modelName
        self.chatTemplateSource = chatTemplateSource
        self.contextLength = contextLength
        self.maxActive = maxActive
        self.script = script
    }

    /// Answers every request with `reply`, one character a step.
    public convenience init(reply: String, stepDelay: Duration = .zero) {
        self.init { _ in
            reply.indices.flatMap { i in
                [Step.text(String(reply[...i]))] + (stepDelay > .zero ? [.pause(stepDelay)] : [])
            }
        }
    }

    public func makeConstraint(grammar: CompiledGrammar, identity: String) -> (any GenerationConstraint)? {
        chatTemplateSource == nil ? nil : UnappliedConstraint(identity: identity)
    }

    /// Every request generated so far, in the order they started.
    public var requests: [BackendRequest] { state.withLock { $0.requests } }
    public var activeGenerations: Int { state.withLock { $0.active } }

    public static func render(_ input: PromptInput) -> [Int32] {
        switch input {
        case .tokens(let ids):
            return ids
        case .text(let text):
            return text.utf8.map { Int32($0) }
        case .conversation(let instructions, let conversation, _):
            let messages = (instructions.map { [ChatMessage(role: .system, content: $0)] } ?? []) + conversation
            var out: [Int32] = []
            for m in messages {
                let open: Int32 =
                    switch m.role {
                    case .system: 1
                    case .user: 3
                    case .assistant: 255
                    case .tool: 4
                    }
                out.append(open)
                out += m.content.utf8.map { Int32($0) }
                out.append(2)
            }
            return out + [255]
        }
    }

    public func prepare(_ input: PromptInput) -> PreparedPrompt {
        PreparedPrompt(input: input, tokens: Self.render(input))
    }

    public func checkCapacity() throws(GenerationError) {
        let (active, shutDown) = state.withLock { ($0.active, $0.shutDown) }
        if shutDown { throw .shuttingDown }
        if active >= maxActive { throw .serverBusy(queueLength: 0, retryAfterSeconds: 1) }
    }

    public func submit(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration {
        try checkCapacity()
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            try await self.play(request, onEvent: onEvent)
        }
    }

    /// Plays the request's script once it is awaited.
    private func play(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) async throws(GenerationError) -> GenerationResult {
        try checkCapacity()
        state.withLock {
            $0.active += 1
            $0.requests.append(request)
        }
        defer { state.withLock { $0.active -= 1 } }
        onEvent(.started(promptTokens: request.prompt.tokenCount, cachedTokens: 0))
        var content = ""
        var produced = 0
        func result(_ reason: FinishReason) -> GenerationResult {
            GenerationResult(
                content: content, finishReason: reason,
                usage: GenerationUsage(
                    promptTokens: request.prompt.tokenCount, completionTokens: produced, cachedTokens: 0),
                timings: GenerationTimings(
                    promptMilliseconds: 0, generationMilliseconds: 0, promptTokensPerSecond: 0,
                    generationTokensPerSecond: 0),
                tokens: [], stepsAfterCancel: 0)
        }
        for step in script(request) {
            if Task.isCancelled { return result(.cancelled) }
            switch step {
            case .text(let text):
                if produced == request.maxTokens { return result(.length) }
                content = text
                produced += 1
                onEvent(.snapshot(content: content, completionTokens: produced))
            case .event(let event):
                onEvent(event)
            case .pause(let duration):
                try? await Task.sleep(for: duration)
            case .hold(let wait):
                await wait()
            case .finish(let reason):
                return result(reason)
            case .fail(let error):
                throw error
            }
        }
        return result(Task.isCancelled ? .cancelled : .stop)
    }

    public func shutdown() { state.withLock { $0.shutDown = true } }
}

/// A constraint a scripted backend takes without applying it (its script decides the text).
struct UnappliedConstraint: GenerationConstraint {
    let identity: String

    func makeProcessor() -> any LogitsProcessor { Unapplied() }

    final class Unapplied: LogitsProcessor {
        func process(logits: UnsafeMutableBufferPointer<Float>) {}
        func accept(token: Int32) -> Bool { true }
        var mustEnd: Bool { false }
        var canEnd: Bool { true }
    }
}
