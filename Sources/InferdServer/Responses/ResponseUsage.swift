/// `usage` of a response: `input_tokens` with the cached part, `output_tokens` (no reasoning).
struct ResponseUsage: Codable, Sendable, Equatable {
    struct InputDetails: Codable, Sendable, Equatable {
        var cachedTokens: Int
        enum CodingKeys: String, CodingKey { case cachedTokens = "cached_tokens" }
    }
    struct OutputDetails: Codable, Sendable, Equatable {
        var reasoningTokens = 0
        enum CodingKeys: String, CodingKey { case reasoningTokens = "reasoning_tokens" }
    }

    var inputTokens: Int
    var inputTokensDetails: InputDetails
    var outputTokens: Int
    var outputTokensDetails = OutputDetails()
    var totalTokens: Int

    init(input: Int, cached: Int, output: Int) {
        inputTokens = input
        inputTokensDetails = InputDetails(cachedTokens: cached)
        outputTokens = output
        totalTokens = input + output
    }

    enum CodingKeys: String, CodingKey {
        case inputTokens = "input_tokens"
        case inputTokensDetails = "input_tokens_details"
        case outputTokens = "output_tokens"
        case outputTokensDetails = "output_tokens_details"
        case totalTokens = "total_tokens"
    }
}
