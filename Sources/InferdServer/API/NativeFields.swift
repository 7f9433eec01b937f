import HTTPServer

/// A native request body (`/v1/generations`, the session routes) read one typed field at a time,
/// as the OpenAI routes read theirs. A field the route does not know is a 400 `unknown_parameter`
/// naming it (a misspelt option must not silently do nothing); a value of the wrong type or
/// range is a 400 `invalid_value` naming it. Null counts as absent.
struct NativeFields: Sendable {
    let fields: OpenAIFields

    init(_ fields: OpenAIFields, allowed: Set<String>) throws(HTTPError) {
        let unknown = fields.values.keys.filter { !allowed.contains($0) }.sorted()
        if let first = unknown.first {
            let names = unknown.map(fields.name).joined(separator: ", ")
            let where_ = fields.path.isEmpty ? "this endpoint" : fields.path
            throw .badRequest(
                "unknown field\(unknown.count == 1 ? "" : "s") \(names); \(where_) accepts "
                    + allowed.sorted().joined(separator: ", "),
                code: .unknownParameter, param: fields.name(first))
        }
        self.fields = fields
    }

    /// The request's body as an object of `allowed` fields. An `optional` body may be empty
    /// (it then reads as `{}`).
    static func body(of request: HTTPRequest, allowed: Set<String>, optional: Bool = false) throws -> NativeFields {
        if optional && request.body.isEmpty { return try NativeFields(OpenAIFields([:]), allowed: allowed) }
        let fields: OpenAIFields
        do {
            fields = try OpenAIJSON.fields(of: request)
        } catch let e as HTTPError where e.code == .invalidValue {
            throw HTTPError.badRequest("the request body must be a JSON object", code: .invalidRequest)
        }
        return try NativeFields(fields, allowed: allowed)
    }

    /// Runs one of `OpenAIFields`' typed reads, answering its type error as `invalid_value`.
    private func read<T>(_ body: () throws(OpenAIError) -> T) throws(HTTPError) -> T {
        do {
            return try body()
        } catch {
            throw .badRequest(error.message, code: .invalidValue, param: error.param)
        }
    }

    func string(_ key: String) throws(HTTPError) -> String? {
        try read { () throws(OpenAIError) in try fields.string(key) }
    }
    /// A string naming something by id: see `OpenAIFields.id`.
    func id(_ key: String) throws(HTTPError) -> String? { try read { () throws(OpenAIError) in try fields.id(key) } }
    func bool(_ key: String) throws(HTTPError) -> Bool? { try read { () throws(OpenAIError) in try fields.bool(key) } }
    func int(_ key: String) throws(HTTPError) -> Int? { try read { () throws(OpenAIError) in try fields.int(key) } }

    func stringOrList(_ key: String) throws(HTTPError) -> [String]? {
        try read { () throws(OpenAIError) in try fields.stringOrList(key) }
    }

    /// A required string: absent (or null) is 400 `invalid_request` naming it.
    func requiredString(_ key: String) throws(HTTPError) -> String {
        guard let s = try string(key) else {
            throw .badRequest("missing field '\(fields.name(key))'", code: .invalidRequest, param: fields.name(key))
        }
        return s
    }

    /// Any finite number.
    func double(_ key: String) throws(HTTPError) -> Double? {
        guard let v = fields[key] else { return nil }
        guard let d = v.number, d.isFinite else { throw invalid(key, "a number", v) }
        return d
    }

    /// A number a 32-bit float holds: `1e308` is refused here rather than becoming infinity.
    func float(_ key: String) throws(HTTPError) -> Float? {
        guard let v = fields[key] else { return nil }
        guard let d = v.number, d.isFinite, d.magnitude <= Double(Float.greatestFiniteMagnitude) else {
            throw invalid(key, "a number within ±3.4e38", v)
        }
        return Float(d)
    }

    /// A seed: an integer from 0 to 2^64 − 1 (negative ones are refused, not reinterpreted).
    func seed(_ key: String) throws(HTTPError) -> UInt64? {
        guard let v = fields[key] else { return nil }
        switch v {
        case .int(let i) where i >= 0: return UInt64(i)
        case .double(let d) where d.rounded() == d && d >= 0 && d < 18_446_744_073_709_551_616: return UInt64(d)
        default: throw invalid(key, "an integer from 0 to 18446744073709551615", v)
        }
    }

    /// A policy by its wire name (`priority`, `on_busy`, `on_cancel`): an unknown name is a 400
    /// `invalid_request` naming the field and listing the allowed ones.
    func choice<T: RawRepresentable & CaseIterable>(_ key: String) throws(HTTPError) -> T? where T.RawValue == String {
        guard let raw = try string(key) else { return nil }
        return try WireChoice.parse(raw, fields.name(key), as: T.self)
    }

    /// A nested object of `allowed` fields.
    func object(_ key: String, allowed: Set<String>) throws(HTTPError) -> NativeFields? {
        guard let o = try read({ () throws(OpenAIError) in try fields.object(key) }) else { return nil }
        return try NativeFields(o, allowed: allowed)
    }

    private func invalid(_ key: String, _ expected: String, _ got: OpenAIJSON) -> HTTPError {
        .badRequest(
            "\(fields.name(key)) must be \(expected), got \(got.compactDescription)", code: .invalidValue,
            param: fields.name(key))
    }
}
