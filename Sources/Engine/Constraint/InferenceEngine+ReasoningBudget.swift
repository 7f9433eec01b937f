extension InferenceEngine {
    /// A `ReasoningBudget` over this model's vocabulary: `</think>` as plain text encodes it (a
    /// vocabulary with `</think>` as a user-defined token, as Qwen 3's, forces that one token;
    /// others spell it in pieces), and tokens read as the detokenizer writes them (control tokens
    /// write nothing).
    public func makeReasoningBudget(
        _ budget: Int, startsInReasoning: Bool, inner: (any GenerationConstraint)?
    ) -> ReasoningBudget {
        let tokenizer = self.tokenizer
        return ReasoningBudget(
            budget: budget, closing: tokenizer.encode("</think>"), startsInReasoning: startsInReasoning,
            inner: inner,
            pieces: { id in
                var bytes: [UInt8] = []
                tokenizer.appendPiece(id, renderSpecial: false, to: &bytes)
                return bytes
            })
    }
}
