import Backend
import Engine
import HTTPServer

/// The `options` object of native requests (`/v1/generations`, sessions). Every field is optional;
/// absent ones take the server's defaults.
package struct GenerationOptionsBody: Codable, Sendable, Equatable {
    var temperature: Float?
    var topK: Int?
    var topP: Float?
    var minP: Float?
    var repeatPenalty: Float?
    var repeatLastN: Int?
    /// OpenAI's penalties over this answer's tokens (see `SamplingOptions`).
    var presencePenalty: Float?
    var frequencyPenalty: Float?
    var seed: UInt64?
    var maxTokens: Int?
    var stop: StopList?
    var ignoreEos: Bool?
    /// Structured output: `json_schema`, `json_object` or `grammar` (see `FormatField`).
    var format: FormatField?
    /// The answer's tokens' log-probabilities, with `topLogprobs` alternatives each (0–20).
    var logprobs: Bool?
    var topLogprobs: Int?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case temperature, seed, stop, format, logprobs
        case topLogprobs = "top_logprobs"
        case topK = "top_k"
        case topP = "top_p"
        case minP = "min_p"
        case repeatPenalty = "repeat_penalty"
        case repeatLastN = "repeat_last_n"
        case presencePenalty = "presence_penalty"
        case frequencyPenalty = "frequency_penalty"
        case maxTokens = "max_tokens"
        case ignoreEos = "ignore_eos"
    }
}

extension GenerationOptionsBody {
    /// Greedy options with a token budget (what `inferd bench --http` sends).
    package static func greedy(maxTokens: Int, ignoreEos: Bool) -> GenerationOptionsBody {
        GenerationOptionsBody(temperature: 0, maxTokens: maxTokens, ignoreEos: ignoreEos)
    }

    /// The fields `options` accepts; any other is refused, naming it.
    static let fieldNames: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))

    /// `options` of a native request, read field by field (see `NativeFields`).
    init(_ f: NativeFields) throws(HTTPError) {
        temperature = try f.float("temperature")
        topK = try f.int("top_k")
        topP = try f.float("top_p")
        minP = try f.float("min_p")
        repeatPenalty = try f.float("repeat_penalty")
        repeatLastN = try f.int("repeat_last_n")
        presencePenalty = try f.float("presence_penalty")
        frequencyPenalty = try f.float("frequency_penalty")
        seed = try f.seed("seed")
        maxTokens = try f.int("max_tokens")
        stop = try f.stringOrList("stop").map(StopList.init)
        ignoreEos = try f.bool("ignore_eos")
        format = try FormatField.native(f)
        logprobs = try f.bool("logprobs")
        topLogprobs = try f.int("top_logprobs")
    }

    /// Where the engine writes the log-probabilities these options ask for; nil without
    /// `logprobs: true`. Out-of-range alternatives, alternatives without `logprobs`, or a backend
    /// computing none are a 400 naming the field.
    func logprobRecorder(backend: any GenerationBackend) throws(HTTPError) -> LogprobRecorder? {
        if let top = topLogprobs, !(0...LogprobRecorder.maxTop).contains(top) {
            throw .badRequest(
                "top_logprobs must be between 0 and \(LogprobRecorder.maxTop), got \(top)", code: .invalidOption,
                param: "options.top_logprobs")
        }
        guard logprobs == true else {
            guard topLogprobs == nil else {
                throw .badRequest(
                    "top_logprobs requires logprobs: true", code: .invalidOption, param: "options.top_logprobs")
            }
            return nil
        }
        guard backend.computesLogprobs else {
            throw .badRequest(
                "this server's backend does not compute log-probabilities", code: .invalidOption,
                param: "options.logprobs")
        }
        return LogprobRecorder(top: topLogprobs ?? 0)
    }

    /// The `options` object of `f`, if present.
    static func read(_ f: NativeFields) throws(HTTPError) -> GenerationOptionsBody? {
        try f.object("options", allowed: fieldNames).map { f throws(HTTPError) in try GenerationOptionsBody(f) }
    }
}

/// `stop` may be one string or a list of strings.
struct StopList: Codable, Sendable, Equatable {
    var values: [String]

    init(_ values: [String]) { self.values = values }

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let one = try? c.decode(String.self) {
            values = [one]
        } else {
            values = try c.decode([String].self)
        }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(values)
    }
}

extension GenerationOptionsBody {
    /// The sampling options and stop strings these options ask for, checked: a bad value is a
    /// 400 `invalid_option` naming it. Shared by every endpoint that takes `options`.
    func validatedSamplingAndStop(names: FieldNames = .native) throws(HTTPError) -> (SamplingOptions, [String]) {
        var sampling = SamplingOptions()
        if let v = temperature { sampling.temperature = v }
        if let v = topK { sampling.topK = v }
        if let v = topP { sampling.topP = v }
        if let v = minP { sampling.minP = v }
        if let v = repeatPenalty { sampling.repeatPenalty = v }
        if let v = repeatLastN { sampling.repeatLastN = v }
        if let v = presencePenalty { sampling.presencePenalty = v }
        if let v = frequencyPenalty { sampling.frequencyPenalty = v }
        sampling.seed = seed
        do {
            try sampling.validate()
        } catch {
            var e = HTTPError(error)
            if case .invalidOption(let name, _) = error { e.param = names.option(name) }
            throw e
        }
        let stop = self.stop?.values ?? []
        guard stop.count <= 16, stop.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 256 }) else {
            throw HTTPError.badRequest(
                "stop takes at most 16 non-empty strings of at most 256 bytes", code: .invalidOption,
                param: names.option("stop"))
        }
        return (sampling, stop)
    }
}
