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
    /// The rendered prompt ends inside an opened `<think>` (DeepSeek R1 distills, QwQ, some
    /// Qwen 3 templates end the generation prompt with `<think>\n`): the answer starts inside
    /// its reasoning and writes only `</think>`. False when unknown (a backend that renders
    /// elsewhere).
    public var opensReasoning = false

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

    /// Whether rendered prompt text ends with `<think>` and optional whitespace.
    public static func opensReasoning(_ text: String) -> Bool {
        var rest = text.utf8[...]
        while let last = rest.last, last == 0x20 || last == 0x0A || last == 0x09 || last == 0x0D {
            rest = rest.dropLast()
        }
        return rest.elementsEqual("<think>".utf8) || rest.reversed().starts(with: "<think>".utf8.reversed())
    }
}
