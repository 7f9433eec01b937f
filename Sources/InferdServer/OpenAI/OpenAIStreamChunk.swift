import Engine

/// One `data:` line of an OpenAI stream: `chat.completion.chunk` with a `delta`, or
/// `text_completion` with a `text` piece. The usage chunk has no choices. With
/// `include_usage`, every chunk carries `usage` (null until the last), as OpenAI sends it.
struct OpenAIStreamChunk: Encodable, Sendable {
    var kind: OpenAICompletionBody.Kind
    var id: String
    var created: Int
    var model: String
    /// False for the final usage chunk (`choices: []`).
    var hasChoice = true
    /// Chat only: set on the first chunk.
    var role: String?
    /// The new text; nil in the role and finish chunks of a chat stream.
    var content: String?
    var finishReason: String?
    var includeUsageField = false
    var usage: OpenAIUsage?
    /// Chat with tools: new reasoning text, and calls' openings and argument fragments.
    var reasoning: String?
    var toolCalls: [ToolAnswerTracker.CallDelta] = []
    /// The log-probabilities of this chunk's tokens, when asked for; `logprobsOffset`: where the
    /// chunk's text starts in the whole answer (completions' `text_offset`).
    var logprobs: [TokenLogprob]?
    var logprobsOffset = 0
    /// The echoed prompt's entries (its chunk only).
    var promptLogprobs: PromptLogprobs?
    /// The choice's index (text completions with several prompts or `n`).
    var index = 0

    enum Keys: String, CodingKey {
        case id, object, created, model, choices, usage, index, delta, role, content, text, logprobs
        case type, function, name, arguments
        case finishReason = "finish_reason"
        case toolCalls = "tool_calls"
        case reasoningContent = "reasoning_content"
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind == .chat ? "chat.completion.chunk" : "text_completion", forKey: .object)
        try c.encode(created, forKey: .created)
        try c.encode(model, forKey: .model)
        var choices = c.nestedUnkeyedContainer(forKey: .choices)
        if hasChoice {
            var choice = choices.nestedContainer(keyedBy: Keys.self)
            try choice.encode(index, forKey: .index)
            switch kind {
            case .chat:
                var delta = choice.nestedContainer(keyedBy: Keys.self, forKey: .delta)
                try delta.encodeIfPresent(role, forKey: .role)
                try delta.encodeIfPresent(content, forKey: .content)
                try delta.encodeIfPresent(reasoning, forKey: .reasoningContent)
                if !toolCalls.isEmpty {
                    var calls = delta.nestedUnkeyedContainer(forKey: .toolCalls)
                    for call in toolCalls {
                        var c = calls.nestedContainer(keyedBy: Keys.self)
                        try c.encode(call.index, forKey: .index)
                        if let id = call.id {
                            try c.encode(id, forKey: .id)
                            try c.encode("function", forKey: .type)
                        }
                        var f = c.nestedContainer(keyedBy: Keys.self, forKey: .function)
                        try f.encodeIfPresent(call.name, forKey: .name)
                        try f.encode(call.arguments, forKey: .arguments)
                    }
                }
            case .text:
                try choice.encode(content ?? "", forKey: .text)
            }
            switch (kind, logprobs) {
            case (_, nil): try choice.encodeNil(forKey: .logprobs)
            case (.chat, let entries?): try choice.encode(OpenAILogprobs.Chat(entries), forKey: .logprobs)
            case (.text, let entries?):
                try choice.encode(
                    OpenAILogprobs.Legacy(entries, offset: logprobsOffset, prompt: promptLogprobs), forKey: .logprobs)
            }
            try choice.encode(finishReason, forKey: .finishReason)
        }
        if includeUsageField { try c.encode(usage, forKey: .usage) }
    }
}
