import GenerationVocabulary

/// One generation as every route and session asks a backend for it: a prepared prompt (a
/// conversation, text or token ids), how to sample, when to stop, its place and deadline.
/// Message-level: a backend decides how the prompt reaches a model (the local engine renders
/// it through the chat template into token ids; a remote one sends the messages).
public struct BackendRequest: Sendable {
    public var prompt: PreparedPrompt
    /// Tokens to generate at most; checked against the context with `prompt.tokenCount`.
    public var maxTokens: Int
    public var sampling: SamplingOptions
    /// Generation ends before any of these strings; the string itself is not returned.
    public var stop: [String]
    /// Never sample an end-of-generation token (benchmarks and load tests want fixed lengths).
    public var ignoreEndOfGeneration = false
    public var priority = GenerationPriority.interactive
    /// When the whole request (waiting, prompt and generation) must be over.
    public var deadline: ContinuousClock.Instant?
    /// An identifier for logs (the request id).
    public var label: String
    /// Whose work this is: reuse (prefix cache, single-flight) stays within one scope.
    public var scope = GenerationScope.shared
    /// A kept KV cache to continue, made by the backend's `kvCache` capability; nil starts fresh.
    public var sequence: (any PredictorSequence)?
    /// Structured output: a grammar the answer must follow (made by the backend's
    /// `makeConstraint`); nil leaves the answer free.
    public var constraint: (any GenerationConstraint)?
    /// Log-probabilities of the generated tokens, written there as they come; nil computes none.
    public var logprobs: LogprobRecorder?

    public init(
        prompt: PreparedPrompt, maxTokens: Int, sampling: SamplingOptions = .init(), stop: [String] = [],
        sequence: (any PredictorSequence)? = nil, label: String = ""
    ) {
        self.prompt = prompt
        self.maxTokens = maxTokens
        self.sampling = sampling
        self.stop = stop
        self.sequence = sequence
        self.label = label
    }
}
