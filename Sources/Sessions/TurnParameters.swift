import GenerationVocabulary

/// How much to generate and how to sample, already validated by the caller.
public struct TurnParameters: Sendable {
    /// Nil: as much as fits, up to the server's default.
    public var maxTokens: Int?
    public var sampling: SamplingOptions
    public var stop: [String]
    public var ignoreEndOfGeneration: Bool
    /// Structured output: the grammar the answer must follow (made by the backend's
    /// `makeConstraint`); nil leaves the answer free.
    public var constraint: (any GenerationConstraint)?
    /// Tools: how the prompt is rendered and the answer kept; nil for plain text turns.
    public var reader: (any TurnAnswerReader)?
    /// Log-probabilities of the answer's tokens, written there as they come; nil computes none.
    public var logprobs: LogprobRecorder?

    public init(
        maxTokens: Int? = nil, sampling: SamplingOptions = .init(), stop: [String] = [],
        ignoreEndOfGeneration: Bool = false, constraint: (any GenerationConstraint)? = nil
    ) {
        self.constraint = constraint
        self.maxTokens = maxTokens
        self.sampling = sampling
        self.stop = stop
        self.ignoreEndOfGeneration = ignoreEndOfGeneration
    }
}
