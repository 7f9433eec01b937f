import Engine

/// One choice of a non-streaming answer: chat's assistant message, or a text completion's text
/// (after its echoed prompt, when asked).
struct OpenAICompletionChoice: Sendable {
    var index = 0
    var content: String
    var finishReason: String
    /// Chat: the calls the answer made (content is then null when empty, as OpenAI sends it).
    var toolCalls: [ToolCall] = []
    /// Chat: a thinking template's reasoning, apart from the answer.
    var reasoning: String?
    /// The answer's tokens' log-probabilities, when asked for (`OpenAILogprobs`).
    var logprobs: [TokenLogprob]?
    /// Text with `echo`: the prompt's text, which `text` starts with, and its tokens' entries
    /// (first in `logprobs`, the first token's `null`) when log-probabilities were asked for.
    var echoText: String?
    var promptLogprobs: PromptLogprobs?

    enum Keys: String, CodingKey {
        case index, message, role, content, refusal, text, logprobs
        case type, function, name, arguments, id
        case finishReason = "finish_reason"
        case toolCalls = "tool_calls"
        case reasoningContent = "reasoning_content"
    }

    func encode(kind: OpenAICompletionBody.Kind, into choice: inout KeyedEncodingContainer<Keys>) throws {
        try choice.encode(index, forKey: .index)
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
            try choice.encode((echoText ?? "") + content, forKey: .text)
        }
        switch (kind, logprobs) {
        case (_, nil): try choice.encodeNil(forKey: .logprobs)
        case (.chat, let entries?): try choice.encode(OpenAILogprobs.Chat(entries), forKey: .logprobs)
        case (.text, let entries?):
            try choice.encode(OpenAILogprobs.Legacy(entries, prompt: promptLogprobs), forKey: .logprobs)
        }
        try choice.encode(finishReason, forKey: .finishReason)
    }
}
