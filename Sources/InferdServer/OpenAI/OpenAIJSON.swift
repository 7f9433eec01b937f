/// Any JSON value, for OpenAI request bodies: they are read field by field so every refusal can
/// name the parameter, and so "neutral" values of unsupported parameters (`logprobs: false`,
/// `tools: []`) can be told from real requests for them.
package enum OpenAIJSON: Decodable, Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([OpenAIJSON])
    case object([String: OpenAIJSON])

    package init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([OpenAIJSON].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: OpenAIJSON].self))
        }
    }

    /// The JSON type's name, for error messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    var isNull: Bool { self == .null }

    /// A number as a Double, whichever way it was written.
    var number: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }
}
