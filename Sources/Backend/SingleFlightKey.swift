import Engine

/// What makes two backend requests interchangeable: equal keys produce the same answer, token
/// for token, so one generation of the wrapped backend can serve both.
///
/// Only requests whose answer cannot depend on who asks get a key: greedy, or sampled with an
/// explicit seed (a random seed makes every answer its own), and not bound to a sequence (a
/// session's KV cache belongs to that session alone). Everything else in the request that
/// changes the output is part of the key and compared exactly; the label is not (it only names
/// the request in logs).
struct SingleFlightKey: Hashable, Sendable {
    /// The prompt as the backend runs it: its token ids when it tokenizes in this process (so a
    /// conversation and raw ids that render the same share), else the input it sends on.
    enum Prompt: Equatable, Sendable {
        case tokens([Int32])
        case input(PromptInput)
    }

    let prompt: Prompt
    let maxTokens: Int
    /// Compared as a whole, so an option added to `SamplingOptions` later is part of the key
    /// without anyone remembering to add it here.
    let sampling: SamplingOptions
    let stop: [String]
    let ignoreEndOfGeneration: Bool
    /// A background request must not ride on an interactive one's place, nor the reverse.
    let priority: GenerationPriority
    /// What the constraint allows (nil without one): a constrained answer differs.
    let constraint: String?
    /// Whose work it is: requests of different API keys (or cache salts) never share a
    /// generation, so one tenant's timing tells nothing of another's prompts.
    let scope: GenerationScope

    /// Nil when the request must run on its own. One with a deadline (`timeout_seconds`) runs on
    /// its own too: its timeout must end its own generation, not a shared one.
    init?(_ request: BackendRequest) {
        let sampling = request.sampling
        // One asking for log-probabilities runs on its own too: they are written to its own recorder.
        guard request.sequence == nil, request.deadline == nil, request.logprobs == nil,
            sampling.temperature == 0 || sampling.seed != nil
        else { return nil }
        priority = request.priority
        prompt = request.prompt.tokens.map(Prompt.tokens) ?? .input(request.prompt.input)
        maxTokens = request.maxTokens
        self.sampling = sampling
        stop = request.stop
        ignoreEndOfGeneration = request.ignoreEndOfGeneration
        constraint = request.constraint?.identity
        scope = request.scope
    }

    // Hashes a subset of what `==` compares (equal keys still hash equally); `SamplingOptions`
    // and `PromptInput` are only Equatable, and the prompt already spreads keys well.
    func hash(into hasher: inout Hasher) {
        switch prompt {
        case .tokens(let ids):
            hasher.combine(ids)
        case .input(.tokens(let ids)):
            hasher.combine(ids)
        case .input(.text(let text)):
            hasher.combine(text)
        case .input(.conversation(let instructions, let messages, _)):
            hasher.combine(instructions)
            for message in messages { hasher.combine(message.content) }
        }
        hasher.combine(maxTokens)
        hasher.combine(sampling.seed)
        hasher.combine(stop)
        hasher.combine(constraint)
    }
}
