/// Which OpenAI parameters an endpoint honours, which it accepts and ignores, and which it
/// refuses. A refused parameter is still accepted with the value that asks for nothing (null,
/// `false`, `0`, `[]`, `n: 1`…) because many clients send those by default; any other value, and
/// any parameter OpenAI's API does not have, gets one 400 that names every offender.
/// The README's "OpenAI-compatible API" section lists the same sets.
struct OpenAIParameterPolicy: Sendable {
    /// Honoured (the handler reads them).
    let supported: Set<String>
    /// Accepted and without effect.
    let ignored: Set<String>
    /// Refused unless the value is neutral; the hint says what to do instead.
    let refused: [String: Refusal]

    struct Refusal: Sendable {
        let isNeutral: @Sendable (OpenAIJSON) -> Bool
        let hint: String

        init(hint: String = "", isNeutral: @escaping @Sendable (OpenAIJSON) -> Bool = { _ in false }) {
            self.hint = hint
            self.isNeutral = isNeutral
        }
    }

    /// Parameters common to both endpoints that inferd honours, OpenAI's and its extensions.
    static let common: Set<String> = [
        "model", "max_tokens", "temperature", "top_p", "seed", "stop", "stream", "stream_options",
        "presence_penalty", "frequency_penalty", "top_k", "min_p", "repeat_penalty", "repeat_last_n", "ignore_eos",
        "priority", "timeout_seconds", "cache_salt",
        "response_format", "grammar", "logprobs", "logprobs_mode",
    ]

    static let commonRefused: [String: Refusal] = [
        "logit_bias": Refusal { $0 == .object([:]) }
    ]

    static let chat = OpenAIParameterPolicy(
        supported: common.union([
            "messages", "max_completion_tokens", "session_id", "on_busy", "tools", "tool_choice",
            "parallel_tool_calls", "chat_template_kwargs", "top_logprobs", "reasoning_budget",
        ]),
        ignored: [
            "user", "metadata", "store", "service_tier", "prompt_cache_key", "safety_identifier",
        ],
        refused: commonRefused.merging(
            [
                "n": Refusal(hint: "only n=1 is supported on chat; /v1/completions takes n") { $0 == .int(1) },
                "functions": Refusal(hint: "deprecated: use tools") { $0 == .array([]) },
                "function_call": Refusal(hint: "deprecated: use tool_choice") { $0 == .string("none") },
                "modalities": Refusal(hint: "text only") { $0 == .array([.string("text")]) },
                "audio": Refusal(hint: "text only"),
                "prediction": Refusal(),
                "reasoning_effort": Refusal(),
                "verbosity": Refusal(),
                "web_search_options": Refusal(),
            ], uniquingKeysWith: { a, _ in a }))

    static let completion = OpenAIParameterPolicy(
        supported: common.union(["prompt", "echo", "n"]),
        ignored: ["user"],
        refused: commonRefused.merging(
            [
                "best_of": Refusal(hint: "only best_of=1 is supported") { $0 == .int(1) },
                "suffix": Refusal(hint: "insertion is not supported") { $0 == .string("") },
            ], uniquingKeysWith: { _, b in b }))

    /// Throws one 400 listing every refused or unknown parameter; `param` names the first.
    func check(_ fields: OpenAIFields) throws(OpenAIError) {
        var refusedHere: [String] = []
        var unknown: [String] = []
        for key in fields.values.keys.sorted() {
            let value = fields.values[key]!
            if supported.contains(key) || ignored.contains(key) { continue }
            if let refusal = refused[key] {
                if value.isNull || refusal.isNeutral(value) { continue }
                let hint = refusal.hint.isEmpty ? "" : " (\(refusal.hint))"
                refusedHere.append("\(key)=\(value.compactDescription)\(hint)")
            } else {
                unknown.append(key)
            }
        }
        guard !refusedHere.isEmpty || !unknown.isEmpty else { return }
        var parts: [String] = []
        if !refusedHere.isEmpty { parts.append("unsupported parameters: " + refusedHere.joined(separator: ", ")) }
        if !unknown.isEmpty { parts.append("unrecognized request arguments: " + unknown.joined(separator: ", ")) }
        let first = refusedHere.first.map { String($0.prefix { $0 != "=" }) } ?? unknown[0]
        throw .unsupported(parts.joined(separator: "; "), param: first)
    }
}

extension OpenAIJSON {
    /// A short rendering for error messages: scalars as written, containers by type.
    var compactDescription: String {
        switch self {
        case .null: "null"
        case .bool(let b): "\(b)"
        case .int(let i): "\(i)"
        case .double(let d): "\(d)"
        case .string(let s): s.count <= 40 ? "\"\(s)\"" : "\"\(s.prefix(40))…\""
        case .array: "[…]"
        case .object: "{…}"
        }
    }
}
