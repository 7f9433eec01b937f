/// How a request's wire format names the fields shared validation checks, so every error it
/// raises carries the caller's own field name in `param` (never recovered from message text).
struct FieldNames: Sendable, Equatable {
    /// Where the sampling fields live: `options.` in native bodies, nothing in OpenAI's flat ones.
    var optionsPrefix: String
    /// The completion budget's name as the caller wrote it (`max_tokens`, `max_completion_tokens`).
    var maxTokens: String
    /// The field holding the prompt (`prompt`, `messages`).
    var prompt: String

    static let native = FieldNames(optionsPrefix: "options.", maxTokens: "max_tokens", prompt: "prompt")

    static func openAI(maxTokens: String, prompt: String) -> FieldNames {
        FieldNames(optionsPrefix: "", maxTokens: maxTokens, prompt: prompt)
    }

    /// The `param` of a sampling or stop field.
    func option(_ name: String) -> String { optionsPrefix + name }

    var maxTokensParam: String { optionsPrefix + maxTokens }
}
