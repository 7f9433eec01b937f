import Engine

/// What chat and text completions share: the model asked for, streaming, and the sampling and
/// length options, mapped onto the native `GenerationOptionsBody` so validation and defaults are
/// the native API's.
struct OpenAIGenerationParameters: Sendable {
    var model: String
    var stream: Bool
    var includeUsage: Bool
    var options: GenerationOptionsBody
    /// The field that set `max_tokens`, for error messages.
    var maxTokensParam: String
    /// The `priority` and `timeout_seconds` extensions.
    var admission: AdmissionFields
    /// The `cache_salt` extension (see `CacheSalt`).
    var cacheSalt: String?
    /// Log-probabilities asked for (each route reads its own fields: `LogprobAsk`).
    var logprobs: LogprobAsk?
    /// Completions' `max_tokens: 0` with `echo`: the prompt is scored and nothing generated
    /// (`options.maxTokens` then holds 1, for the native validation).
    var scoresOnly = false

    init(_ f: OpenAIFields, maxTokensKeys: [String]) throws(OpenAIError) {
        guard let model = try f.string("model") else {
            throw .invalid("you must provide a model parameter", param: "model", code: .missingRequiredParameter)
        }
        self.model = model
        stream = try f.bool("stream") ?? false
        if let so = try f.object("stream_options") {
            guard stream else {
                throw .invalid("stream_options is only allowed when stream is true", param: "stream_options")
            }
            includeUsage = try so.bool("include_usage") ?? false
        } else {
            includeUsage = false
        }
        var o = try Self.sampling(f)
        o.repeatLastN = try f.int("repeat_last_n")
        // OpenAI's own penalties, chat and completions only: the Responses API has none.
        o.presencePenalty = try f.float("presence_penalty")
        o.frequencyPenalty = try f.float("frequency_penalty")
        if let stop = try f.stringOrList("stop") { o.stop = StopList(stop) }
        o.format = try FormatField.openAI(f)
        maxTokensParam = maxTokensKeys.last ?? "max_tokens"
        // The first key present wins (`max_completion_tokens` replaces the deprecated `max_tokens`).
        for key in maxTokensKeys {
            if let n = try f.int(key) {
                o.maxTokens = n
                maxTokensParam = key
                break
            }
        }
        options = o
        admission = try Self.admission(f)
        cacheSalt = try CacheSalt.read(f)
    }

    /// The sampling fields OpenAI's routes share (with inferd's extensions `top_k`, `min_p`,
    /// `repeat_penalty`, `seed`, `ignore_eos`), onto the native options.
    static func sampling(_ f: OpenAIFields) throws(OpenAIError) -> GenerationOptionsBody {
        var o = GenerationOptionsBody()
        o.temperature = try f.float("temperature")
        o.topP = try f.float("top_p")
        o.topK = try f.int("top_k")
        o.minP = try f.float("min_p")
        o.repeatPenalty = try f.float("repeat_penalty")
        o.seed = try f.seed("seed")
        o.ignoreEos = try f.bool("ignore_eos")
        return o
    }

    static func admission(_ f: OpenAIFields) throws(OpenAIError) -> AdmissionFields {
        var timeout: Double?
        if let v = f["timeout_seconds"] {
            guard let d = v.number else { throw f.typeError("timeout_seconds", "a number", v) }
            timeout = d
        }
        let priority: GenerationPriority? = try f.choice("priority")
        do {
            return try AdmissionFields(priority: priority, timeoutSeconds: timeout)
        } catch {
            throw .invalid(error.message, param: error.param)
        }
    }
}
