/// How the next token is chosen. Temperature 0 is greedy (argmax), which ignores every other option.
public struct SamplingOptions: Sendable, Equatable {
    public var temperature: Float = 0.8
    /// Keep only the `topK` most likely tokens; 0 disables.
    public var topK: Int = 40
    /// Keep the smallest set of tokens whose probability reaches `topP`; 1 disables.
    public var topP: Float = 0.95
    /// Drop tokens less likely than `minP` times the most likely one; 0 disables.
    public var minP: Float = 0.05
    /// Divide positive logits (multiply negative ones) of recently seen tokens; 1 disables.
    public var repeatPenalty: Float = 1.0
    /// How many of the most recent tokens (prompt included) the repetition penalty looks at.
    public var repeatLastN: Int = 64
    /// OpenAI's `presence_penalty`: subtracted once from the logit of every token already in this
    /// answer (the prompt is not counted); in [-2, 2], 0 disables, a negative value favours them.
    public var presencePenalty: Float = 0
    /// OpenAI's `frequency_penalty`: subtracted from a token's logit once per time it already
    /// occurs in this answer (the prompt is not counted); in [-2, 2], 0 disables.
    public var frequencyPenalty: Float = 0
    /// The same seed and options give the same output; nil picks a random seed.
    public var seed: UInt64? = nil

    public init() {}

    public static let greedy: SamplingOptions = {
        var o = SamplingOptions()
        o.temperature = 0
        return o
    }()

    /// Checks ranges, naming the first bad option.
    public func validate() throws(GenerationError) {
        func bad(_ name: String, _ rule: String) -> GenerationError { .invalidOption(name: name, reason: rule) }
        guard temperature.isFinite, temperature >= 0, temperature <= 100 else {
            throw bad("temperature", "must be between 0 and 100")
        }
        guard topK >= 0 else { throw bad("top_k", "must be 0 or more") }
        guard topP.isFinite, topP > 0, topP <= 1 else { throw bad("top_p", "must be in (0, 1]") }
        guard minP.isFinite, minP >= 0, minP <= 1 else { throw bad("min_p", "must be in [0, 1]") }
        guard repeatPenalty.isFinite, repeatPenalty > 0, repeatPenalty <= 10 else {
            throw bad("repeat_penalty", "must be in (0, 10]")
        }
        guard repeatLastN >= 0 else { throw bad("repeat_last_n", "must be 0 or more") }
        guard presencePenalty.isFinite, presencePenalty >= -2, presencePenalty <= 2 else {
            throw bad("presence_penalty", "must be between -2 and 2")
        }
        guard frequencyPenalty.isFinite, frequencyPenalty >= -2, frequencyPenalty <= 2 else {
            throw bad("frequency_penalty", "must be between -2 and 2")
        }
    }
}
