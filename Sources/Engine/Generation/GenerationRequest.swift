/// One generation: the prompt as token ids, how to sample, when to stop.
public struct GenerationRequest: Sendable {
    public var promptTokens: [Int32]
    public var maxTokens: Int
    public var sampling: SamplingOptions
    /// Generation ends before any of these strings; the string itself is not returned.
    public var stop: [String]
    /// A sequence to continue (a session's KV cache): its tokens that match the start of
    /// `promptTokens` are reused, the rest is cut off and recomputed. Nil starts fresh.
    public var sequence: (any PredictorSequence)?
    /// An identifier for logs (the request id).
    public var label: String
    /// Whose work this is: a kept prefix is reused only by requests of the same scope.
    public var scope = GenerationScope.shared
    /// Never sample an end-of-generation token (benchmarks and load tests want fixed lengths).
    public var ignoreEndOfGeneration = false
    /// Interactive generations get a place before background ones, and may take a running
    /// background one's place (see `AdmissionQueue`).
    public var priority = GenerationPriority.interactive
    /// When the whole request (waiting, prompt and generation) must be over. Passed while waiting:
    /// `GenerationError.queueTimeout`; while running: the answer so far, `FinishReason.timeout`.
    public var deadline: ContinuousClock.Instant?
    /// Shapes the output (structured output: a grammar the answer must match). Its processor
    /// masks the logits before every sample and is told every sampled token.
    public var constraint: (any GenerationConstraint)?
    /// Log-probabilities of the generated tokens, written there as they come; nil computes none.
    public var logprobs: LogprobRecorder?

    public init(
        promptTokens: [Int32], maxTokens: Int, sampling: SamplingOptions = .init(), stop: [String] = [],
        sequence: (any PredictorSequence)? = nil, label: String = ""
    ) {
        self.promptTokens = promptTokens
        self.maxTokens = maxTokens
        self.sampling = sampling
        self.stop = stop
        self.sequence = sequence
        self.label = label
    }
}
