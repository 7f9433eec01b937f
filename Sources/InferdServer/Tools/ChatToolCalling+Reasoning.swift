import Backend
import Engine
import ToolCalling

extension ChatToolCalling {
    /// Completes `calling` once its prompt is rendered: a prompt that opened `<think>` makes the
    /// answer start inside the reasoning (parsed so, and the grammar then requires `</think>`),
    /// the tools' constraint is built, and a `reasoning_budget` wraps it. A budget is refused
    /// (400 naming `reasoning_budget`) where it would not be enforced: a template that does not
    /// think (or thinking turned off), a remote engine (the upstream samples; no OpenAI-compatible
    /// field carries a budget faithfully), a backend that cannot force tokens.
    static func finish(
        _ calling: ChatToolCalling?, prompt: PreparedPrompt, budget: Int?, backend: any GenerationBackend,
        names: ToolFieldNames
    ) throws(OpenAIError) -> ChatToolCalling? {
        if budget != nil, backend.forwardsTools, backend.chatTemplateSource == nil {
            throw .unsupported(
                "reasoning_budget is not supported over a remote engine (backend openai): the upstream samples the answer",
                param: ReasoningBudgetField.name)
        }
        guard var calling else {
            if budget != nil { throw ReasoningBudgetField.notThinking }
            return nil
        }
        if prompt.opensReasoning {
            calling.format = calling.format.startingInReasoning(true)
            calling.reasoning = true
        }
        if let use = calling.use {
            calling.constraint = try ToolConstraint.make(
                use, format: calling.format, reasoning: calling.reasoning, backend: backend, names: names)
        }
        if let budget {
            guard calling.reasoning else { throw ReasoningBudgetField.notThinking }
            guard
                let bounded = backend.reasoningBudget(
                    budget, startsInReasoning: calling.format.startsInReasoning, inner: calling.constraint)
            else {
                throw .unsupported(
                    "reasoning_budget: this model's backend cannot force the end of its reasoning",
                    param: ReasoningBudgetField.name)
            }
            calling.constraint = bounded
        }
        return calling
    }
}
