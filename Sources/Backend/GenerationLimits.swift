/// The server's limits and defaults for one generation's numbers, in one pure value that every
/// route and the sessions check against, so a stateless request and a session turn follow the
/// same rules (`default_max_tokens`, `max_tokens_limit`, `max_prompt_tokens` of the configuration).
public struct GenerationLimits: Sendable, Equatable {
    /// The completion budget when a request gives none (still capped by what fits and the limit).
    public var defaultMaxTokens: Int
    /// The largest completion budget a request may ask for.
    public var maxTokensLimit: Int
    /// The longest prompt a request may send.
    public var maxPromptTokens: Int

    public init(defaultMaxTokens: Int = 512, maxTokensLimit: Int = 4096, maxPromptTokens: Int = 4096) {
        self.defaultMaxTokens = defaultMaxTokens
        self.maxTokensLimit = maxTokensLimit
        self.maxPromptTokens = maxPromptTokens
    }

    /// What is wrong with a request's numbers; the caller names the field in its wire format.
    public enum Violation: Error, Equatable, Sendable {
        /// `max_tokens` below 1.
        case maxTokensBelowOne(Int)
        /// The prompt and the completion budget do not fit the context.
        case contextOverflow(promptTokens: Int, maxTokens: Int, contextLength: Int)
        case promptTooLong(promptTokens: Int, limit: Int)
        case maxTokensTooLarge(Int, limit: Int)
    }

    /// Checks a request's own numbers before anything runs: `max_tokens` at least 1, the prompt
    /// and `max_tokens` within this server's limits. A prompt or budget that could never fit the
    /// context passes here: the context check (`budget`) answers for it, so the client is told
    /// the more fundamental problem.
    public func check(promptTokens: Int, requestedMaxTokens: Int?, contextLength: Int) throws(Violation) {
        if let m = requestedMaxTokens, m < 1 { throw .maxTokensBelowOne(m) }
        if promptTokens > maxPromptTokens, promptTokens <= contextLength {
            throw .promptTooLong(promptTokens: promptTokens, limit: maxPromptTokens)
        }
        if let m = requestedMaxTokens, m > maxTokensLimit, m <= contextLength {
            throw .maxTokensTooLarge(m, limit: maxTokensLimit)
        }
    }

    /// A session's defaults, checked when it is created (or they change), since every turn carries
    /// them: its instructions (`instructionTokens`) must fit the context and `maxPromptTokens`,
    /// and its default `max_tokens` the limit and, after the instructions, the context. A context
    /// overflow with instructions that fit alone is the budget's fault (the caller names
    /// `max_tokens`); unlike `check`, a budget past the context is never let through to a later check.
    public func checkDefaults(instructionTokens: Int, maxTokens: Int?, contextLength: Int) throws(Violation) {
        if let m = maxTokens, m < 1 { throw .maxTokensBelowOne(m) }
        if instructionTokens >= contextLength {
            throw .contextOverflow(
                promptTokens: instructionTokens, maxTokens: maxTokens ?? 1, contextLength: contextLength)
        }
        if instructionTokens > maxPromptTokens {
            throw .promptTooLong(promptTokens: instructionTokens, limit: maxPromptTokens)
        }
        guard let m = maxTokens else { return }
        if m > maxTokensLimit { throw .maxTokensTooLarge(m, limit: maxTokensLimit) }
        if instructionTokens + m > contextLength {
            throw .contextOverflow(promptTokens: instructionTokens, maxTokens: m, contextLength: contextLength)
        }
    }

    /// The completion budget of a prompt about to run: the requested one, else as much as fits up
    /// to the default and the limit (at least 1); throws when prompt and budget overflow the context.
    public func budget(promptTokens: Int, requestedMaxTokens: Int?, contextLength: Int) throws(Violation) -> Int {
        if let m = requestedMaxTokens, m < 1 { throw .maxTokensBelowOne(m) }
        let maxTokens =
            requestedMaxTokens ?? max(1, min(defaultMaxTokens, maxTokensLimit, contextLength - promptTokens))
        guard promptTokens + maxTokens <= contextLength else {
            throw .contextOverflow(promptTokens: promptTokens, maxTokens: maxTokens, contextLength: contextLength)
        }
        return maxTokens
    }

    /// Both, in the order a stateless request is answered: the context first, then the limits.
    public func admit(promptTokens: Int, requestedMaxTokens: Int?, contextLength: Int) throws(Violation) -> Int {
        let maxTokens = try budget(
            promptTokens: promptTokens, requestedMaxTokens: requestedMaxTokens, contextLength: contextLength)
        try check(promptTokens: promptTokens, requestedMaxTokens: maxTokens, contextLength: contextLength)
        return maxTokens
    }
}
