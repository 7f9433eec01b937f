/// Thinking with a bound: once an answer has written `budget` tokens inside its reasoning (it
/// opened `<think>`, or the prompt did, and has not closed it), the next tokens are forced to the
/// tokenization of `</think>`, and the answer goes on after it. Wraps the request's other
/// constraint (a tool grammar, which allows the optional `<think>…</think>` prefix): that one
/// shapes every token but the forced ones, and is told of every token, forced ones included, so
/// its state follows the whole answer.
///
/// The reasoning is read from the tokens' output bytes (`pieces`), as the answer parser reads it
/// from the text: a leading `<think>` after optional whitespace opens it, the first `</think>`
/// closes it; an answer that starts with anything else has no reasoning and is left alone.
public struct ReasoningBudget: GenerationConstraint {
    /// Tokens the reasoning may hold; 0 closes it at once.
    public let budget: Int
    /// `</think>` as this vocabulary spells it, forced one token per step.
    public let closing: [Int32]
    /// The prompt already opened `<think>`: the answer starts inside the reasoning.
    public let startsInReasoning: Bool
    /// The constraint the budget wraps, if any.
    public let inner: (any GenerationConstraint)?
    /// The bytes a token adds to the output (none for control tokens), to see `<think>` and
    /// `</think>` whatever the tokenization.
    let pieces: @Sendable (Int32) -> [UInt8]

    public init(
        budget: Int, closing: [Int32], startsInReasoning: Bool, inner: (any GenerationConstraint)?,
        pieces: @escaping @Sendable (Int32) -> [UInt8]
    ) {
        precondition(budget >= 0 && !closing.isEmpty)
        self.budget = budget
        self.closing = closing
        self.startsInReasoning = startsInReasoning
        self.inner = inner
        self.pieces = pieces
    }

    /// Two budgets allow the same answers when their bounds, starts and inner constraints do.
    public var identity: String {
        "reasoning_budget=\(budget);opened=\(startsInReasoning);" + (inner?.identity ?? "")
    }

    public func makeProcessor() -> any LogitsProcessor {
        ReasoningBudgetProcessor(self, inner: inner?.makeProcessor())
    }
}
