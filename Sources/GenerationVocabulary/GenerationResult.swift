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
    /// The caller's stop string that ended the answer (it is not part of `content`); nil when the
    /// answer ended otherwise, or the backend cannot tell (a remote engine).
    public var stopSequence: String? = nil

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
