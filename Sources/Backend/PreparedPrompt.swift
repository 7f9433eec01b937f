/// A prompt as a backend will run it: what the caller sent, and its length in the backend's
/// tokens, known before anything runs, so the context budget is checked before a stream starts.
/// The backend that prepared it is the one that runs it.
public struct PreparedPrompt: Sendable, Equatable {
    /// The conversation, text or token ids as the caller sent them: what a backend that runs
    /// elsewhere (a remote engine) sends on.
    public var input: PromptInput
    public var tokenCount: Int
    /// The rendered ids, when the backend tokenizes in this process; matched against a kept KV
    /// cache's tokens to find what a session's next turn can reuse. Nil for a backend that
    /// sends the input elsewhere.
    public var tokens: [Int32]?

    public init(input: PromptInput, tokens: [Int32]) {
        self.input = input
        self.tokenCount = tokens.count
        self.tokens = tokens
    }

    public init(input: PromptInput, tokenCount: Int) {
        self.input = input
        self.tokenCount = tokenCount
        self.tokens = nil
    }
}
