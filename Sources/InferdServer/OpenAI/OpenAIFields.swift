import HTTPServer
import StructuredOutput

/// A JSON object read one typed field at a time. Null counts as absent, as in OpenAI's API;
/// a value of the wrong type is a 400 naming the parameter (`messages[1].content`).
package struct OpenAIFields: Sendable {
    let values: [String: OpenAIJSON]
    /// The path of this object in the request, for error messages (empty at the top level).
    let path: String
    /// The same object as the body wrote it, keys in their order (a JSON Schema's `properties`
    /// are generated in that order): read from the body's one parse, nil when it was made otherwise.
    let ordered: JSONValue?

    package init(_ values: [String: OpenAIJSON], path: String = "", ordered: JSONValue? = nil) {
        self.values = values
        self.path = path
        self.ordered = ordered
    }

    /// A member as written, in key order; from the unordered value (keys sorted) without the original.
    func orderedValue(_ key: String) -> JSONValue? {
        // A request body never gives a key twice (refused when parsed); elsewhere the last counts, as in `values`.
        if let members = ordered?.objectMembers { return members.last { $0.key == key }?.value }
        return self[key].map(JSONValue.init)
    }

    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    subscript(key: String) -> OpenAIJSON? {
        guard let v = values[key], !v.isNull else { return nil }
        return v
    }

    func typeError(_ key: String, _ expected: String, _ got: OpenAIJSON) -> OpenAIError {
        .invalid("\(name(key)) must be \(expected), got \(got.typeName)", param: name(key), code: .invalidType)
    }

    func string(_ key: String) throws(OpenAIError) -> String? {
        guard let v = self[key] else { return nil }
        guard case .string(let s) = v else { throw typeError(key, "a string", v) }
        return s
    }

    /// A string naming something by id (`previous_response_id`, `session_id`, `conversation`):
    /// one holding a control character is a 400 naming the field, never looked up (a NUL would
    /// otherwise end it early wherever it meets a C string, and no id holds one).
    func id(_ key: String) throws(OpenAIError) -> String? {
        guard let s = try string(key) else { return nil }
        if let scalar = ControlCharacters.first(in: s) {
            throw .invalid(
                "\(name(key)) holds a control character (\(ControlCharacters.describe(scalar))); ids never do",
                param: name(key))
        }
        return s
    }

    func bool(_ key: String) throws(OpenAIError) -> Bool? {
        guard let v = self[key] else { return nil }
        guard case .bool(let b) = v else { throw typeError(key, "a boolean", v) }
        return b
    }

    func int(_ key: String) throws(OpenAIError) -> Int? {
        guard let v = self[key] else { return nil }
        switch v {
        case .int(let i) where i >= Int64(Int.min) && i <= Int64(Int.max): return Int(i)
        case .double(let d) where d.rounded() == d && abs(d) < 1e15: return Int(d)
        default: throw typeError(key, "an integer", v)
        }
    }

    func float(_ key: String) throws(OpenAIError) -> Float? {
        guard let v = self[key] else { return nil }
        guard let d = v.number else { throw typeError(key, "a number", v) }
        return Float(d)
    }

    /// `seed`: any 64-bit integer; negative ones keep their bit pattern.
    func seed(_ key: String) throws(OpenAIError) -> UInt64? {
        guard let v = self[key] else { return nil }
        switch v {
        case .int(let i): return UInt64(bitPattern: i)
        case .double(let d) where d.rounded() == d && d >= 0 && d < 1.8e19: return UInt64(d)
        default: throw typeError(key, "an integer", v)
        }
    }

    /// A policy by its wire name (`priority`, `on_busy`): an unknown name is a 400 naming the field.
    func choice<T: RawRepresentable & CaseIterable>(_ key: String) throws(OpenAIError) -> T?
    where T.RawValue == String {
        guard let raw = try string(key) else { return nil }
        do {
            return try WireChoice.parse(raw, name(key), as: T.self)
        } catch {
            throw .invalid(error.message, param: name(key))
        }
    }

    func object(_ key: String) throws(OpenAIError) -> OpenAIFields? {
        guard let v = self[key] else { return nil }
        guard case .object(let o) = v else { throw typeError(key, "an object", v) }
        return OpenAIFields(o, path: name(key), ordered: ordered == nil ? nil : orderedValue(key))
    }

    /// `stop`: a string or a list of strings.
    func stringOrList(_ key: String) throws(OpenAIError) -> [String]? {
        guard let v = self[key] else { return nil }
        switch v {
        case .string(let s): return [s]
        case .array(let items):
            var out: [String] = []
            for item in items {
                guard case .string(let s) = item else { throw typeError(key, "a string or a list of strings", v) }
                out.append(s)
            }
            return out
        default: throw typeError(key, "a string or a list of strings", v)
        }
    }
}
