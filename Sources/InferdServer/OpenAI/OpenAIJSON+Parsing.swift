import HTTPServer
import StructuredOutput

/// Reading a request body into `OpenAIJSON` with the project's own parser.
///
/// Why not `JSONDecoder`: `OpenAIJSON` can only learn a value's type from Foundation's decoder
/// by trying each type in turn, and every failed try builds and throws an error; a small chat
/// body took about 170 µs that way on this machine (on every OpenAI and native request's way to
/// the engine or the upstream), a few µs with a parser that knows the type from the first byte.
extension OpenAIJSON {
    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let text, let d):
            // An integer as written (no fraction or exponent, which `Int64(_:)` refuses) that fits stays exact.
            if let i = Int64(text) { self = .int(i) } else { self = .double(d) }
        case .string(let s): self = .string(s)
        case .array(let list): self = .array(list.map(OpenAIJSON.init))
        case .object(let members):
            var object: [String: OpenAIJSON] = [:]
            object.reserveCapacity(members.count)
            // A request body never gives a key twice (`fields(of:)` refuses it); elsewhere the last counts.
            for m in members { object[m.key] = OpenAIJSON(m.value) }
            self = .object(object)
        }
    }

    /// The request's body as a JSON object: `HTTPRequest.checkedJSONBody`'s errors; 400
    /// `invalid_json` naming the byte where the JSON is malformed; 400 `duplicate_key` naming the
    /// path of a key an object gives twice, at any depth; 400 `invalid_value` when it is JSON but
    /// not an object (each route words that one itself).
    package static func object(of request: HTTPRequest) throws -> [String: OpenAIJSON] {
        try fields(of: request).values
    }

    /// The same, as fields to read, keeping the body's key order for what needs it: the body is
    /// parsed once.
    package static func fields(of request: HTTPRequest) throws -> OpenAIFields {
        let body = try request.checkedJSONBody()
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes: body)
        } catch {
            throw HTTPError.badRequest("request body is not valid JSON: \(error.description)", code: .invalidJSON)
        }
        if let path = value.firstDuplicateKey(), case .key(let key)? = path.last {
            let name = JSONValue.describe(path)
            throw HTTPError.badRequest(
                "the request body gives the key '\(key)' twice (at \(name)); each key may appear once per object",
                code: .duplicateKey, param: name)
        }
        guard case .object(let object) = OpenAIJSON(value) else {
            throw HTTPError.badRequest("the request body must be a JSON object", code: .invalidValue)
        }
        return OpenAIFields(object, ordered: value)
    }
}

extension JSONValue {
    /// An unordered value as a `JSONValue`, object keys sorted: where the body's own order is not at hand.
    init(_ v: OpenAIJSON) {
        switch v {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .number(String(i), Double(i))
        case .double(let d): self = .number("\(d)", d)
        case .string(let s): self = .string(s)
        case .array(let a): self = .array(a.map(JSONValue.init))
        case .object(let o): self = .object(o.keys.sorted().map { JSONValue.Member($0, JSONValue(o[$0]!)) })
        }
    }
}
