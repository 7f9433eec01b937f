import Foundation

@testable import StructuredOutput

/// A JSON Schema validator for the keywords inferd supports, written from the specification
/// (draft 2020-12) and sharing nothing with the compiler: what the compiler's grammar lets
/// through is checked here by different code. `oneOf` is checked strictly (exactly one branch),
/// patterns with `NSRegularExpression` (a search, as JSON Schema says), formats by their RFCs.
struct SchemaValidator {
    let root: JSONValue

    /// Every violation, with its JSON path; empty when `value` is valid.
    func errors(_ value: JSONValue, _ schema: JSONValue, path: String = "$") -> [String] {
        switch schema {
        case .bool(let b): return b ? [] : ["\(path): the false schema"]
        case .object: break
        default: return ["\(path): not a schema"]
        }
        var out: [String] = []
        if case .string(let pointer)? = schema["$ref"] {
            guard let target = resolve(pointer) else { return ["\(path): unresolved \(pointer)"] }
            out += errors(value, target, path: path)
        }
        if case .array(let parts)? = schema["allOf"] {
            for p in parts { out += errors(value, p, path: path) }
        }
        if case .array(let parts)? = schema["anyOf"], !parts.contains(where: { errors(value, $0, path: path).isEmpty })
        {
            out.append("\(path): no anyOf branch matches")
        }
        if case .array(let parts)? = schema["oneOf"] {
            let n = parts.filter { errors(value, $0, path: path).isEmpty }.count
            if n != 1 { out.append("\(path): \(n) oneOf branches match") }
        }
        if case .array(let options)? = schema["enum"], !options.contains(where: { Self.equal($0, value) }) {
            out.append("\(path): not one of the enum values")
        }
        if let c = schema["const"], !Self.equal(c, value) { out.append("\(path): not the const value") }
        if let n = schema["not"], errors(value, n, path: path).isEmpty { out.append("\(path): matches the not schema") }
        if let t = schema["type"] {
            var names: [String] = []
            if case .string(let n) = t { names = [n] }
            if case .array(let list) = t { names = list.compactMap(\.stringValue) }
            if case .bool(true)? = schema["nullable"] { names.append("null") }
            if !names.contains(where: { Self.hasType(value, $0) }) { out.append("\(path): not of type \(names)") }
        }
        switch value {
        case .object(let members): out += objectErrors(members, schema, path: path)
        case .array(let items): out += arrayErrors(items, schema, path: path)
        case .string(let s): out += stringErrors(s, schema, path: path)
        case .number(_, let d): out += numberErrors(d, schema, path: path)
        default: break
        }
        return out
    }

    func resolve(_ pointer: String) -> JSONValue? {
        guard pointer.hasPrefix("#") else { return nil }
        var node = root
        for part in pointer.dropFirst().split(separator: "/") {
            let key = part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard let next = node[key] else { return nil }
            node = next
        }
        return node
    }

    static func hasType(_ v: JSONValue, _ name: String) -> Bool {
        switch (v, name) {
        case (.null, "null"), (.bool, "boolean"), (.string, "string"), (.array, "array"), (.object, "object"),
            (.number, "number"):
            return true
        case (.number(_, let d), "integer"): return d == d.rounded()
        default: return false
        }
    }

    /// JSON equality: numbers by value, strings by code points, objects by members whatever
    /// their order.
    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.number(_, let x), .number(_, let y)): return x == y
        case (.string(let x), .string(let y)): return Array(x.unicodeScalars) == Array(y.unicodeScalars)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count
                && x.allSatisfy { m in y.contains { $0.key == m.key && equal($0.value, m.value) } }
        default: return a == b
        }
    }

    func objectErrors(_ members: [JSONValue.Member], _ schema: JSONValue, path: String) -> [String] {
        var out: [String] = []
        let properties = schema["properties"]?.objectMembers ?? []
        if case .array(let required)? = schema["required"] {
            for r in required.compactMap(\.stringValue) where !members.contains(where: { $0.key == r }) {
                out.append("\(path): missing required \(r)")
            }
        }
        var keys: Set<String> = []
        for m in members {
            if keys.contains(m.key) { out.append("\(path): duplicate key \(m.key)") }
            keys.insert(m.key)
            if let p = properties.first(where: { $0.key == m.key }) {
                out += errors(m.value, p.value, path: "\(path).\(m.key)")
            } else if let extra = schema["additionalProperties"] {
                out += errors(m.value, extra, path: "\(path).\(m.key)")
            }
        }
        return out
    }

    func arrayErrors(_ items: [JSONValue], _ schema: JSONValue, path: String) -> [String] {
        var out: [String] = []
        var prefix: [JSONValue] = []
        var rest = schema["items"]
        if case .array(let p)? = schema["prefixItems"] { prefix = p }
        // Drafts 4 to 2019-09: `items` as an array is the tuple, `additionalItems` the rest.
        if case .array(let p)? = schema["items"] { (prefix, rest) = (p, schema["additionalItems"]) }
        for (i, item) in items.enumerated() {
            if i < prefix.count {
                out += errors(item, prefix[i], path: "\(path)[\(i)]")
            } else if let s = rest {
                out += errors(item, s, path: "\(path)[\(i)]")
            }
        }
        if case .bool(true)? = schema["uniqueItems"] {
            for i in items.indices where items[..<i].contains(where: { Self.equal($0, items[i]) }) {
                out.append("\(path)[\(i)]: repeats an earlier item")
            }
        }
        if let n = schema["minItems"]?.numberValue, Double(items.count) < n {
            out.append("\(path): fewer than \(n) items")
        }
        if let n = schema["maxItems"]?.numberValue, Double(items.count) > n {
            out.append("\(path): more than \(n) items")
        }
        return out
    }

    func stringErrors(_ s: String, _ schema: JSONValue, path: String) -> [String] {
        var out: [String] = []
        let length = Double(s.unicodeScalars.count)
        if let n = schema["minLength"]?.numberValue, length < n { out.append("\(path): shorter than \(n)") }
        if let n = schema["maxLength"]?.numberValue, length > n { out.append("\(path): longer than \(n)") }
        if let p = schema["pattern"]?.stringValue, !Self.search(p, s) { out.append("\(path): does not match /\(p)/") }
        if let f = schema["format"]?.stringValue, let re = Self.formats[f], !Self.search(re, s) {
            out.append("\(path): not a valid \(f)")
        }
        if schema["format"]?.stringValue == "byte", !Self.isBase64(s) { out.append("\(path): not canonical base64") }
        return out
    }

    func numberErrors(_ d: Double, _ schema: JSONValue, path: String) -> [String] {
        var out: [String] = []
        if let m = schema["minimum"]?.numberValue, d < m { out.append("\(path): below \(m)") }
        if let m = schema["maximum"]?.numberValue, d > m { out.append("\(path): above \(m)") }
        if let m = schema["exclusiveMinimum"]?.numberValue, d <= m { out.append("\(path): not above \(m)") }
        if let m = schema["exclusiveMaximum"]?.numberValue, d >= m { out.append("\(path): not below \(m)") }
        // Draft 4: a boolean `exclusiveMinimum`/`exclusiveMaximum` makes the bound beside it exclusive.
        if case .bool(true)? = schema["exclusiveMinimum"], let m = schema["minimum"]?.numberValue, d == m {
            out.append("\(path): not above \(m)")
        }
        if case .bool(true)? = schema["exclusiveMaximum"], let m = schema["maximum"]?.numberValue, d == m {
            out.append("\(path): not below \(m)")
        }
        return out
    }

    /// RFC 4648 base64 as strict decoders take it: Foundation decodes it and encodes the bytes
    /// back to the same text (padding present, the bits it drops at zero).
    static func isBase64(_ s: String) -> Bool {
        guard let data = Data(base64Encoded: s) else { return false }
        return data.base64EncodedString() == s
    }

    static func search(_ pattern: String, _ s: String) -> Bool {
        guard let re = try? NSRegularExpression(pattern: pattern) else { return false }
        return re.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
    }

    /// The formats, anchored, after RFC 3339 (dates and times), RFC 5321 (a common subset of
    /// addresses), RFC 4122, RFC 791, RFC 4291 (without an embedded IPv4 tail), RFC 3986, RFC 1123.
    static let formats: [String: String] = {
        let date = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
        let time = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
        let label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
        let octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
        let h16 = "[0-9A-Fa-f]{1,4}"
        let ipv6 = [
            "(\(h16):){7}\(h16)", "((\(h16):){0,6}\(h16))?::((\(h16):){0,6}\(h16))?",
        ].joined(separator: "|")
        return [
            "date": "^\(date)$", "time": "^\(time)$", "date-time": "^\(date)[Tt]\(time)$",
            "email": "^[A-Za-z0-9._%+-]+@\(label)(\\.\(label))+$",
            "uuid": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
            "ipv4": "^\(octet)(\\.\(octet)){3}$", "ipv6": "^(\(ipv6))$",
            "uri": "^[A-Za-z][A-Za-z0-9+.-]*:[^\\s\"<>\\\\^`{|}]*$", "hostname": "^\(label)(\\.\(label))*$",
        ]
    }()
}
