/// `POST /v1/completions`, read from its JSON object: one prompt or a list of them, each as text
/// or as token ids, `n` choices each, the prompt echoed (with its log-probabilities) or not.
package struct OpenAICompletionRequest: Sendable {
    enum Prompt: Sendable, Equatable {
        case text(String)
        case tokens([Int32])
    }

    /// Most prompts one request may list, and most choices it may ask for in all (prompts × `n`).
    static let maxPrompts = 64
    static let maxChoices = 64
    /// Most choices per prompt (`n`).
    static let maxN = 16

    var prompts: [Prompt]
    var n: Int
    /// Each choice's text starts with its prompt's, and its log-probabilities with the prompt's
    /// tokens' (the first `null`).
    var echo: Bool
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
        echo = try f.bool("echo") ?? false
        n = try f.int("n") ?? 1
        guard (1...Self.maxN).contains(n) else {
            throw .invalid("n must be between 1 and \(Self.maxN), got \(n)", param: "n")
        }
        // `max_tokens: 0` scores the echoed prompt without generating.
        if parameters.options.maxTokens == 0 {
            guard echo else { throw .invalid("max_tokens 0 requires echo", param: parameters.maxTokensParam) }
            guard parameters.logprobs != nil else {
                throw .invalid("max_tokens 0 requires logprobs: there would be nothing to return", param: "logprobs")
            }
            parameters.options.maxTokens = 1
            parameters.scoresOnly = true
        }
        guard let raw = f["prompt"] else {
            throw .invalid("prompt is required", param: "prompt", code: .missingRequiredParameter)
        }
        prompts = try Self.prompts(raw)
        guard prompts.count <= Self.maxPrompts else {
            throw .invalid("prompt lists at most \(Self.maxPrompts) prompts, got \(prompts.count)", param: "prompt")
        }
        guard prompts.count * n <= Self.maxChoices else {
            throw .invalid(
                "\(prompts.count) prompts × n \(n) is \(prompts.count * n) choices; at most \(Self.maxChoices)",
                param: "n")
        }
    }

    /// A string, a list of token ids, or a list of either (one choice per prompt, in order).
    static func prompts(_ raw: OpenAIJSON) throws(OpenAIError) -> [Prompt] {
        switch raw {
        case .string(let s):
            return [.text(s)]
        case .array(let items) where !items.isEmpty && items.allSatisfy({ if case .int = $0 { true } else { false } }):
            return [try tokens(items, param: "prompt")]
        case .array(let items) where !items.isEmpty:
            var out: [Prompt] = []
            for (i, item) in items.enumerated() {
                switch item {
                case .string(let s): out.append(.text(s))
                case .array(let ids) where !ids.isEmpty: out.append(try tokens(ids, param: "prompt[\(i)]"))
                default:
                    throw .invalid(
                        "prompt[\(i)] must be a string or a non-empty list of token ids, got \(item.typeName)",
                        param: "prompt[\(i)]", code: .invalidType)
                }
            }
            return out
        default:
            throw .invalid(
                "prompt must be a string, a list of token ids, or a list of either, got \(raw.typeName)",
                param: "prompt", code: .invalidType)
        }
    }

    static func tokens(_ items: [OpenAIJSON], param: String) throws(OpenAIError) -> Prompt {
        var ids: [Int32] = []
        for item in items {
            guard case .int(let i) = item, let id = Int32(exactly: i), id >= 0 else {
                throw .invalid("\(param) token ids must be non-negative 32-bit integers", param: param)
            }
            ids.append(id)
        }
        return .tokens(ids)
    }
}
