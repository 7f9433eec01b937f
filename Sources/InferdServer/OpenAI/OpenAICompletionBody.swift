import Engine

/// A non-streaming answer: `chat.completion` (assistant messages) or `text_completion` (texts),
/// its choices in index order, with usage over all of them.
struct OpenAICompletionBody: Encodable, Sendable {
    enum Kind: Sendable {
        case chat, text
    }

    var kind: Kind
    var id: String
    var created: Int
    var model: String
    var choices: [OpenAICompletionChoice]
    var usage: OpenAIUsage

    enum Keys: String, CodingKey {
        case id, object, created, model, choices, usage
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind == .chat ? "chat.completion" : "text_completion", forKey: .object)
        try c.encode(created, forKey: .created)
        try c.encode(model, forKey: .model)
        var list = c.nestedUnkeyedContainer(forKey: .choices)
        for choice in choices {
            var container = list.nestedContainer(keyedBy: OpenAICompletionChoice.Keys.self)
            try choice.encode(kind: kind, into: &container)
        }
        try c.encode(usage, forKey: .usage)
    }
}
