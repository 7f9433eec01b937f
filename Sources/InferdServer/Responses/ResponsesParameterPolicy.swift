/// Which top-level fields `POST /v1/responses` takes. Honoured fields are read by
/// `ResponsesRequest`; a few OpenAI fields that cannot change what inferd does are accepted
/// (`user`, `safety_identifier`, `prompt_cache_key`); OpenAI fields for features inferd lacks are
/// refused with a 400 naming them unless sent with the value that asks for nothing; any other
/// field is refused as `unknown_parameter`. The README's Responses table lists the same sets.
enum ResponsesParameterPolicy {
    static let supported: Set<String> = [
        "model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "store", "metadata",
        "truncation", "stream", "background", "previous_response_id", "conversation", "text",
        "tools", "tool_choice", "parallel_tool_calls",
        // inferd's extensions, as on the chat route.
        "top_k", "min_p", "repeat_penalty", "seed", "priority", "timeout_seconds", "ignore_eos", "cache_salt",
        "reasoning_budget", "include", "top_logprobs",
    ]

    /// Accepted without effect: identifiers and cache hints that change nothing inferd does.
    static let ignored: Set<String> = ["user", "safety_identifier", "prompt_cache_key"]

    typealias Refusal = OpenAIParameterPolicy.Refusal

    static let refused: [String: Refusal] = [
        "max_tool_calls": Refusal(hint: "the number of tool calls is not limited"),
        "reasoning": Refusal(hint: "this model has no reasoning settings") {
            guard case .object(let o) = $0 else { return false }
            return o.values.allSatisfy(\.isNull)
        },
        "stream_options": Refusal(hint: "no stream obfuscation is done") {
            $0 == .object([:]) || $0 == .object(["include_obfuscation": .bool(false)])
        },
        "service_tier": Refusal(hint: "one service tier") { $0 == .string("auto") || $0 == .string("default") },
        "prompt": Refusal(hint: "prompt templates are not supported"),
        "context_management": Refusal(),
        "prompt_cache_retention": Refusal(),
    ]

    /// Throws a 400 naming the first unknown field (`unknown_parameter`), else the first refused
    /// one (`unsupported_parameter`).
    static func check(_ fields: OpenAIFields) throws(OpenAIError) {
        let keys = fields.values.keys.sorted()
        if let unknown = keys.first(where: { !supported.contains($0) && !ignored.contains($0) && refused[$0] == nil }) {
            throw .invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: .unknownParameter)
        }
        for key in keys {
            guard let refusal = refused[key], let value = fields.values[key] else { continue }
            if value.isNull || refusal.isNeutral(value) { continue }
            let hint = refusal.hint.isEmpty ? "" : " (\(refusal.hint))"
            throw .unsupported("\(key)=\(value.compactDescription) is not supported\(hint)", param: key)
        }
    }
}
