/// `POST /v1/completions`, read from its JSON object: one prompt, as text or as token ids.
package struct OpenAICompletionRequest: Sendable {
    enum Prompt: Sendable, Equatable {
        case text(String)
        case tokens([Int32])
    }

    var prompt: Prompt
    var parameters: OpenAIGenerationParameters

    package init(_ f: OpenAIFields) throws(OpenAIError) {
        try OpenAIParameterPolicy.completion.check(f)
        parameters = try OpenAIGenerationParameters(f, maxTokensKeys: ["max_tokens"])
        // OpenAI's default for this endpoint is 16 tokens.
        if parameters.options.maxTokens == nil { parameters.options.maxTokens = 16 }
        // `logprobs: N`: the N most likely alternatives per token (0 gives the tokens' own only).
        if case .bool(false)? = f["logprobs"] {
            // The neutral value some clients send: none asked for.
        } else if let top = try LogprobAsk.top(f, "logprobs") {
            parameters.logprobs = LogprobAsk(top: top, distribution: try LogprobAsk.mode(f) ?? .processed)
        } else if try LogprobAsk.mode(f) != nil {
            throw .invalid("logprobs_mode requires logprobs", param: "logprobs_mode")
        }
        guard let raw = f["prompt"] else {
            throw .invalid("prompt is required", param: "prompt", code: .missingRequiredParameter)
        }
        prompt = try Self.prompt(raw)
    }

    /// A string, a list of token ids, or a list holding exactly one of those.
    static func prompt(_ raw: OpenAIJSON) throws(OpenAIError) -> Prompt {
        switch raw {
        case .string(let s):
            return .text(s)
        case .array(let items) where !items.isEmpty && items.allSatisfy({ if case .int = $0 { true } else { false } }):
            var ids: [Int32] = []
            for item in items {
                guard case .int(let i) = item, let id = Int32(exactly: i), id >= 0 else {
                    throw .invalid("prompt token ids must be non-negative 32-bit integers", param: "prompt")
                }
                ids.append(id)
            }
            return .tokens(ids)
        case .array(let items) where items.count == 1:
            return try prompt(items[0])
        case .array(let items) where items.count > 1:
            throw .unsupported("prompt: one prompt per request (got \(items.count))", param: "prompt")
        default:
            throw .invalid(
                "prompt must be a string or a list of token ids, got \(raw.typeName)", param: "prompt",
                code: .invalidType)
        }
    }
}
