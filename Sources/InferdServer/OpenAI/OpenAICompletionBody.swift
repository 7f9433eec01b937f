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

    enum Keys: String, CodingKey {
        case id, object, created, model, choices, usage, index, message, role, content, refusal, text, logprobs
        case finishReason = "finish_reason"
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
            try message.encode(content, forKey: .content)
            try message.encodeNil(forKey: .refusal)
        case .text:
            try choice.encode(content, forKey: .text)
        }
        try choice.encodeNil(forKey: .logprobs)
        try choice.encode(finishReason, forKey: .finishReason)
        try c.encode(usage, forKey: .usage)
    }
}
