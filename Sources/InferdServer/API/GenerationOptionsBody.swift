import Engine
import HTTPServer

/// The `options` object of native requests (`/v1/responses`, sessions). Every field is optional;
/// absent ones take the server's defaults.
package struct GenerationOptionsBody: Codable, Sendable, Equatable {
    var temperature: Float?
    var topK: Int?
    var topP: Float?
    var minP: Float?
    var repeatPenalty: Float?
    var repeatLastN: Int?
    var seed: UInt64?
    var maxTokens: Int?
    var stop: StopList?
    var ignoreEos: Bool?

    enum CodingKeys: String, CodingKey {
        case temperature, seed, stop
        case topK = "top_k"
        case topP = "top_p"
        case minP = "min_p"
        case repeatPenalty = "repeat_penalty"
        case repeatLastN = "repeat_last_n"
        case maxTokens = "max_tokens"
        case ignoreEos = "ignore_eos"
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
    func validatedSamplingAndStop() throws(HTTPError) -> (SamplingOptions, [String]) {
        var sampling = SamplingOptions()
        if let v = temperature { sampling.temperature = v }
        if let v = topK { sampling.topK = v }
        if let v = topP { sampling.topP = v }
        if let v = minP { sampling.minP = v }
        if let v = repeatPenalty { sampling.repeatPenalty = v }
        if let v = repeatLastN { sampling.repeatLastN = v }
        sampling.seed = seed
        do {
            try sampling.validate()
        } catch {
            throw HTTPError.badRequest("invalid options: \(error)", code: "invalid_option")
        }
        let stop = self.stop?.values ?? []
        guard stop.count <= 16, stop.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 256 }) else {
            throw HTTPError.badRequest(
                "stop takes at most 16 non-empty strings of at most 256 bytes", code: "invalid_option")
        }
        return (sampling, stop)
    }
}
