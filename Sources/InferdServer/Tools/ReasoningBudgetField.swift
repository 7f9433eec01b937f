/// `reasoning_budget`, inferd's extension on chat completions and the Responses API: at most
/// this many tokens of reasoning, then `</think>` is forced and the answer follows
/// (`ReasoningBudget`). An integer ≥ 0; 0 closes the reasoning at once.
enum ReasoningBudgetField {
    static let name = "reasoning_budget"

    static func read(_ f: OpenAIFields) throws(OpenAIError) -> Int? {
        guard let budget = try f.int(name) else { return nil }
        guard budget >= 0 else {
            throw .invalid("\(name) must be an integer of at least 0, got \(budget)", param: name)
        }
        return budget
    }

    /// The refusal for a model whose answers do not reason: nothing to bound.
    static var notThinking: OpenAIError {
        .unsupported(
            "\(name): this model's chat template does not think (no <think> reasoning), or thinking is turned off",
            param: name)
    }
}
