/// What generation reports while it runs. Text events carry the whole answer so far
/// (a snapshot), never a piece to append. The one event vocabulary from the engine through
/// sessions to the wire: each case's `name` is its wire name.
public enum GenerationEvent: Sendable, Equatable {
    /// Waiting for a place in the engine; `position` 1 is next. Sent again whenever the
    /// position changes (also when a running background generation is parked).
    case queued(position: Int)
    /// The prompt is in the cache; the first token comes next.
    case started(promptTokens: Int, cachedTokens: Int)
    /// The visible answer grew. `content` is all of it so far.
    case snapshot(content: String, completionTokens: Int)

    public var name: GenerationEventName {
        switch self {
        case .queued: .queued
        case .started: .started
        case .snapshot: .snapshot
        }
    }
}

/// The names of a generation's events, in the order a stream carries them, as the wire spells
/// them (the raw values are SSE `event:` names): the engine's `queued`, `started` and
/// `snapshot`, then exactly one of the terminal events, chosen from the result or the error.
public enum GenerationEventName: String, Sendable, CaseIterable {
    case queued
    case started
    case snapshot
    /// It ended by a stop, its length or its deadline (`finish_reason` says which).
    case completed
    /// Its owner stopped it (the result's `reason` says why); not an error.
    case cancelled
    /// It ended without a result.
    case error
}

extension FinishReason {
    /// The terminal event of a generation that ended this way.
    public var terminalEvent: GenerationEventName { self == .cancelled ? .cancelled : .completed }
}

public enum FinishReason: String, Sendable, Codable {
    /// An end-of-generation token or a stop string.
    case stop
    /// `maxTokens` reached.
    case length
    /// The caller cancelled; not an error.
    case cancelled
    /// The request's deadline passed while it ran; the content is what was generated until then.
    case timeout
}

public struct GenerationUsage: Sendable, Equatable, Codable {
    public var promptTokens: Int
    public var completionTokens: Int
    /// Prompt tokens taken from the sequence's cache instead of being computed.
    public var cachedTokens: Int

    /// Public so a backend other than this engine (a remote or scripted one) can report usage.
    public init(promptTokens: Int, completionTokens: Int, cachedTokens: Int) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.cachedTokens = cachedTokens
    }
}

public struct GenerationTimings: Sendable, Equatable, Codable {
    public var promptMilliseconds: Double
    public var generationMilliseconds: Double
    public var promptTokensPerSecond: Double
    public var generationTokensPerSecond: Double

    public init(
        promptMilliseconds: Double, generationMilliseconds: Double, promptTokensPerSecond: Double,
        generationTokensPerSecond: Double
    ) {
        self.promptMilliseconds = promptMilliseconds
        self.generationMilliseconds = generationMilliseconds
        self.promptTokensPerSecond = promptTokensPerSecond
        self.generationTokensPerSecond = generationTokensPerSecond
    }
}

public struct GenerationResult: Sendable {
    public var content: String
    public var finishReason: FinishReason
    public var usage: GenerationUsage
    public var timings: GenerationTimings
    /// The generated ids, end-of-generation token included when it ended the answer.
    public var tokens: [Int32]
    /// Steps (prompt chunks or tokens) computed after cancellation was requested.
    public var stepsAfterCancel: Int
    /// Set when this request joined an identical generation already in flight (single-flight):
    /// the label (request id) of the request that started it. Usage and timings are then the
    /// shared run's.
    public var sharedFrom: String? = nil
    /// With a constraint: whether the answer ended where the constraint allows an end (a
    /// complete match). Nil without a constraint.
    public var constraintSatisfied: Bool? = nil

    /// Public so a backend other than this engine (a remote or scripted one) can return results.
    public init(
        content: String, finishReason: FinishReason, usage: GenerationUsage, timings: GenerationTimings,
        tokens: [Int32], stepsAfterCancel: Int, sharedFrom: String? = nil
    ) {
        self.content = content
        self.finishReason = finishReason
        self.usage = usage
        self.timings = timings
        self.tokens = tokens
        self.stepsAfterCancel = stepsAfterCancel
        self.sharedFrom = sharedFrom
    }
}
