import Backend

extension ServerConfiguration {
    /// The limits every generation is checked against, stateless or a session's turn.
    var generationLimits: GenerationLimits {
        GenerationLimits(
            defaultMaxTokens: defaultMaxTokens, maxTokensLimit: maxTokensLimit, maxPromptTokens: maxPromptTokens)
    }
}
