/// `tojson` as Hugging Face defines it for chat templates: Python's `json.dumps` with
/// `ensure_ascii=False` and keys in insertion order (`sort_keys` only when asked); `", "` and
/// `": "` separators, or `","` at line ends when indenting.
package enum JinjaJSON {
    static func encode(_ value: JinjaValue, indent: Int?, sortKeys: Bool) throws(JinjaError) -> String {
        var output = ""
        try write(
            value, indent: indent.map { max(0, min($0, 64)) }, level: 0, sortKeys: sortKeys, depth: 0, into: &output)
        return output
    }

    private static func write(
        _ value: JinjaValue, indent: Int?, level: Int, sortKeys: Bool, depth: Int, into output: inout String
    ) throws(JinjaError) {
        guard depth < 64 else { throw .limitExceeded(.nesting, limit: 64) }
        switch value {
        case .none: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .int(let number): output += String(number)
        case .double(let number):
            guard number.isFinite else {
                output += number.isNaN ? "NaN" : (number < 0 ? "-Infinity" : "Infinity"); return
            }
            output += JinjaValue.pythonFloat(number)
        case .string(let text): quote(text.text, into: &output)
        case .list(let items):
            guard !items.isEmpty else { output += "[]"; return }
            output += "["
            for (index, item) in items.enumerated() {
                separator(first: index == 0, indent: indent, level: level + 1, into: &output)
                try write(item, indent: indent, level: level + 1, sortKeys: sortKeys, depth: depth + 1, into: &output)
            }
            close(indent: indent, level: level, into: &output)
            output += "]"
        case .dict(let unordered):
            guard !unordered.isEmpty else { output += "{}"; return }
            let pairs =
                sortKeys
                ? unordered.sorted {
                    Array($0.key.unicodeScalars.map(\.value)).lexicographicallyPrecedes(
                        $1.key.unicodeScalars.map(\.value))
                } : unordered
            output += "{"
            for (index, pair) in pairs.enumerated() {
                separator(first: index == 0, indent: indent, level: level + 1, into: &output)
                quote(pair.key, into: &output)
                output += ": "
                try write(
                    pair.value, indent: indent, level: level + 1, sortKeys: sortKeys, depth: depth + 1, into: &output)
            }
            close(indent: indent, level: level, into: &output)
            output += "}"
        case .namespace(let namespace):
            try write(
                .dict(namespace.attributes), indent: indent, level: level, sortKeys: sortKeys, depth: depth + 1,
                into: &output)
        case .undefined(let name): throw .evaluation("'\(name)' is undefined and cannot be written as JSON")
        default: throw .evaluation("a \(value.typeName) cannot be written as JSON")
        }
    }

    private static func separator(first: Bool, indent: Int?, level: Int, into output: inout String) {
        if let indent {
            if !first { output += "," }
            output += "\n" + String(repeating: " ", count: indent * level)
        } else if !first {
            output += ", "
        }
    }

    private static func close(indent: Int?, level: Int, into output: inout String) {
        if let indent { output += "\n" + String(repeating: " ", count: indent * level) }
    }

    /// A JSON string literal for `text` (the escapes JSON requires, other controls as `\u00XX`);
    /// also what the structured-output front ends write keys and strings with.
    package static func quote(_ text: String, into output: inout String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}
