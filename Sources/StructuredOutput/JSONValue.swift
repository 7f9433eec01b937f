import Engine

/// A JSON value that keeps the order of object members as written (a schema's `properties`
/// order is the order the output follows; Foundation's parser loses it).
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's text as written, and its value.
    case number(String, Double)
    case string(String)
    case array([JSONValue])
    case object([Member])

    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue
        public init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The first member named `key` of an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var objectMembers: [Member]? {
        if case .object(let m) = self { return m }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var numberValue: Double? {
        if case .number(_, let d) = self { return d }
        return nil
    }

    /// Compact JSON text (members in their order, strings escaped as JSON requires).
    public var compactText: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let text, _): out += text
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, m) in members.enumerated() {
                if i > 0 { out += "," }
                Self.writeString(m.key, to: &out)
                out += ":"
                m.value.write(to: &out)
            }
            out += "}"
        }
    }

    static func writeString(_ s: String, to out: inout String) {
        JinjaJSON.quote(s, into: &out)
    }
}
