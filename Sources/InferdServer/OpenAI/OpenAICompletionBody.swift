import Engine

/// A non-streaming answer: `chat.completion` (one assistant message) or `text_completion`
/// (one text), always with one choice and usage.
struct OpenAICompletionBody: Encodable, Sendable {
    enum Kind: Sendable {
        case chat, text
    }

    var kind: Kind
    var id: String
    var created: Int
    var model: String
    var content: String
    var finishReason: String
    var usage: OpenAIUsage
    /// Chat: the calls the answer made (content is then null when empty, as OpenAI sends it).
    var toolCalls: [ToolCall] = []
    /// Chat: a thinking template's reasoning, apart from the answer.
    var reasoning: String?
    /// The answer's tokens' log-probabilities, when asked for (`OpenAILogprobs`).
    var logprobs: [TokenLogprob]?

    enum Keys: String, CodingKey {
        case id, object, created, model, choices, usage, index, message, role, content, refusal, text, logprobs
        case type, function, name, arguments
        case finishReason = "finish_reason"
        case toolCalls = "tool_calls"
        case reasoningContent = "reasoning_content"
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind == .chat ? "chat.completion" : "text_completion", forKey: .object)
        try c.encode(created, forKey: .created)
        try c.encode(model, forKey: .model)
        var choices = c.nestedUnkeyedContainer(forKey: .choices)
        var choice = choices.nestedContainer(keyedBy: Keys.self)
        try choice.encode(0, forKey: .index)
        switch kind {
        case .chat:
            var message = choice.nestedContainer(keyedBy: Keys.self, forKey: .message)
            try message.encode("assistant", forKey: .role)
            if toolCalls.isEmpty || !content.isEmpty {
                try message.encode(content, forKey: .content)
            } else {
                try message.encodeNil(forKey: .content)
            }
            try message.encodeNil(forKey: .refusal)
            if let reasoning, !reasoning.isEmpty { try message.encode(reasoning, forKey: .reasoningContent) }
            if !toolCalls.isEmpty {
                var calls = message.nestedUnkeyedContainer(forKey: .toolCalls)
                for call in toolCalls {
                    var c = calls.nestedContainer(keyedBy: Keys.self)
                    try c.encode(call.id, forKey: .id)
                    try c.encode("function", forKey: .type)
                    var f = c.nestedContainer(keyedBy: Keys.self, forKey: .function)
                    try f.encode(call.name, forKey: .name)
                    try f.encode(call.arguments, forKey: .arguments)
                }
            }
        case .text:
            try choice.encode(content, forKey: .text)
        }
        switch (kind, logprobs) {
        case (_, nil): try choice.encodeNil(forKey: .logprobs)
        case (.chat, let entries?): try choice.encode(OpenAILogprobs.Chat(entries), forKey: .logprobs)
        case (.text, let entries?): try choice.encode(OpenAILogprobs.Legacy(entries), forKey: .logprobs)
        }
        try choice.encode(finishReason, forKey: .finishReason)
        try c.encode(usage, forKey: .usage)
    }
}
