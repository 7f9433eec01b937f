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
