import Engine

/// `usage` of OpenAI answers; cached prompt tokens go in `prompt_tokens_details`.
struct OpenAIUsage: Encodable, Sendable, Equatable {
    struct PromptDetails: Encodable, Sendable, Equatable {
        var cachedTokens: Int
        enum CodingKeys: String, CodingKey { case cachedTokens = "cached_tokens" }
    }

    var promptTokens: Int
    var completionTokens: Int
    var totalTokens: Int
    var promptTokensDetails: PromptDetails

    init(_ u: GenerationUsage) {
        promptTokens = u.promptTokens
        completionTokens = u.completionTokens
        totalTokens = u.promptTokens + u.completionTokens
        promptTokensDetails = PromptDetails(cachedTokens: u.cachedTokens)
    }

    enum CodingKeys: String, CodingKey {
        case promptTokens = "prompt_tokens"
        case completionTokens = "completion_tokens"
        case totalTokens = "total_tokens"
        case promptTokensDetails = "prompt_tokens_details"
    }
}
