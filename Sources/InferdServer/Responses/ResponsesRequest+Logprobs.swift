extension ResponsesRequest {
    /// What `include` may name: only the output text's log-probabilities are available.
    static let includable = "message.output_text.logprobs"

    /// `include` and `top_logprobs` (0–20): log-probabilities are computed when `include` names
    /// them, or when `top_logprobs` asks for alternatives (which would be pointless without).
    static func logprobs(_ f: OpenAIFields) throws(OpenAIError) -> LogprobAsk? {
        var included = false
        if let given = f["include"], !given.isNull {
            guard case .array(let items) = given else {
                throw .invalid(
                    "include must be a list of strings, got \(given.typeName)", param: "include", code: .invalidType)
            }
            for (i, item) in items.enumerated() {
                guard case .string(let name) = item, name == includable else {
                    throw .unsupported(
                        "include[\(i)]=\(item.compactDescription) is not available; only \(includable) is",
                        param: "include")
                }
                included = true
            }
        }
        let top = try LogprobAsk.top(f, "top_logprobs") ?? 0
        guard included || top > 0 else { return nil }
        return LogprobAsk(top: top, distribution: .processed)
    }
}
