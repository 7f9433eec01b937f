import Foundation

/// A value while a template runs: Python-like scalars, provenance-carrying strings, lists,
/// insertion-ordered string-keyed dicts, namespaces, macros and built-in callables.
enum JinjaValue {
    case undefined(String)
    case none
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(JinjaString)
    case list([JinjaValue])
    case dict([(key: String, value: JinjaValue)])
    case namespace(JinjaNamespace)
    case macro(JinjaMacro)
    /// A built-in function (`raise_exception`, `namespace`, `range`, …).
    case function(String)
    /// A method looked up on a value (`content.strip`), called later.
    indirect case method(JinjaValue, String)

    static func string(_ text: String, origin: JinjaString.Origin) -> JinjaValue {
        .string(JinjaString(text, origin: origin))
    }

    var isUndefined: Bool {
        if case .undefined = self { return true }
        return false
    }

    var isTruthy: Bool {
        switch self {
        case .undefined, .none: return false
        case .bool(let value): return value
        case .int(let value): return value != 0
        case .double(let value): return value != 0
        case .string(let value): return !value.isEmpty
        case .list(let items): return !items.isEmpty
        case .dict(let pairs): return !pairs.isEmpty
        case .namespace, .macro, .function, .method: return true
        }
    }

    var typeName: String {
        switch self {
        case .undefined: return "undefined"
        case .none: return "none"
        case .bool: return "boolean"
        case .int: return "integer"
        case .double: return "float"
        case .string: return "string"
        case .list: return "list"
        case .dict: return "dict"
        case .namespace: return "namespace"
        case .macro: return "macro"
        case .function, .method: return "function"
        }
    }

    func lookup(_ key: String) -> JinjaValue? {
        guard case .dict(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }

    /// How `{{ value }}` and the `string` filter show the value, with provenance: strings keep
    /// theirs; numbers and the like count as template text; containers shown Python-style count
    /// as data if any string inside is data.
    func rendered() -> JinjaString {
        switch self {
        case .undefined: return JinjaString()
        case .string(let value): return value
        case .list, .dict: return JinjaString(pythonRepr(), origin: containsData ? .data : .template)
        default: return JinjaString(pythonRepr(), origin: .template)
        }
    }

    var containsData: Bool {
        switch self {
        case .string(let value): return value.containsData
        case .list(let items): return items.contains { $0.containsData }
        case .dict(let pairs): return pairs.contains { $0.value.containsData }
        default: return false
        }
    }

    /// Python's `str()` for scalars and `repr()` inside containers.
    func pythonRepr(quoted: Bool = false) -> String {
        switch self {
        case .undefined: return ""
        case .none: return "None"
        case .bool(let value): return value ? "True" : "False"
        case .int(let value): return String(value)
        case .double(let value): return Self.pythonFloat(value)
        case .string(let value):
            guard quoted else { return value.text }
            let text = value.text
            let quote = text.contains("'") && !text.contains("\"") ? "\"" : "'"
            var escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
            if quote == "'" { escaped = escaped.replacingOccurrences(of: "'", with: "\\'") }
            return quote + escaped + quote
        case .list(let items): return "[" + items.map { $0.pythonRepr(quoted: true) }.joined(separator: ", ") + "]"
        case .dict(let pairs):
            return "{" + pairs.map { "'\($0.key)': " + $0.value.pythonRepr(quoted: true) }.joined(separator: ", ") + "}"
        case .namespace: return "<Namespace>"
        case .macro(let macro): return "<Macro '\(macro.name)'>"
        case .function(let name), .method(_, let name): return "<function \(name)>"
        }
    }

    static func pythonFloat(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == value.rounded() && abs(value) < 1e16 { return String(format: "%.1f", value) }
        return "\(value)"
    }

    /// Python equality: numbers by value (booleans count as 0 and 1), strings by text,
    /// containers item by item.
    func equals(_ other: JinjaValue) -> Bool {
        switch (self, other) {
        case (.undefined, .undefined), (.none, .none): return true
        case (.string(let a), .string(let b)): return a.text == b.text
        case (.list(let a), .list(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.equals($1) }
        case (.dict(let a), .dict(let b)):
            return a.count == b.count
                && a.allSatisfy { pair in b.first { $0.key == pair.key }.map { $0.value.equals(pair.value) } ?? false }
        case (.namespace(let a), .namespace(let b)): return a === b
        default:
            if let a = numeric, let b = other.numeric { return a == b }
            return false
        }
    }

    /// The value as a number, for arithmetic and comparison (booleans are 0 and 1).
    var numeric: Double? {
        switch self {
        case .bool(let value): return value ? 1 : 0
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    var integer: Int? {
        switch self {
        case .bool(let value): return value ? 1 : 0
        case .int(let value): return value
        default: return nil
        }
    }
}
