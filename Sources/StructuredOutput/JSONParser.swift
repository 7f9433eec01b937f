/// A strict JSON parser (RFC 8259) that keeps object member order, for schemas. Errors carry
/// the byte offset where parsing failed.
public struct JSONParser {
    let bytes: [UInt8]
    var index = 0
    /// Deeper nesting is refused (the parser recurses).
    static let maxDepth = 256

    public static func parse(_ text: String) throws(StructuredOutputError) -> JSONValue {
        try parse(bytes: Array(text.utf8))
    }

    /// Parses UTF-8 bytes (invalid UTF-8 inside a string is an error).
    public static func parse(bytes: [UInt8]) throws(StructuredOutputError) -> JSONValue {
        var p = JSONParser(bytes: bytes)
        p.skipWhitespace()
        let v = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.index == p.bytes.count else { throw p.error("unexpected text after the value") }
        return v
    }

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    func error(_ message: String) -> StructuredOutputError {
        .invalidJSON(offset: index, message: message)
    }

    mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func expect(_ literal: String, _ v: JSONValue) throws(StructuredOutputError) -> JSONValue {
        let l = Array(literal.utf8)
        guard index + l.count <= bytes.count, Array(bytes[index..<index + l.count]) == l else {
            throw error("invalid literal")
        }
        index += l.count
        return v
    }

    mutating func value(depth: Int) throws(StructuredOutputError) -> JSONValue {
        guard depth < Self.maxDepth else { throw error("nested deeper than \(Self.maxDepth)") }
        guard index < bytes.count else { throw error("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var members: [JSONValue.Member] = []
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipWhitespace()
                members.append(JSONValue.Member(key, try value(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end in an object") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
                index += 1
                return .object(members)
            }
        case UInt8(ascii: "["):
            index += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end in an array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
                index += 1
                return .array(items)
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        default:
            return try number()
        }
    }

    mutating func number() throws(StructuredOutputError) -> JSONValue {
        let start = index
        func digits() -> Int {
            let s = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            return index - s
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (0x30...0x39).contains(bytes[index]) else { throw error("invalid value") }
        if bytes[index] == UInt8(ascii: "0") { index += 1 } else { _ = digits() }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("expected digits after '.'") }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                index += 1
            }
            guard digits() > 0 else { throw error("expected digits in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let d = Double(text) else { throw error("invalid number") }
        return .number(text, d)
    }

    mutating func hex4() throws(StructuredOutputError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw error("invalid \\u escape")
            }
            v = v * 16 + d
            index += 1
        }
        return v
    }

    mutating func string() throws(StructuredOutputError) -> String {
        index += 1  // the opening quote
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let c = bytes[index]
            index += 1
            switch c {
            case UInt8(ascii: "\""):
                guard let s = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
                return s
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw error("unterminated escape") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var v = try hex4()
                    if (0xD800...0xDBFF).contains(v) {
                        guard index + 2 <= bytes.count, bytes[index] == 0x5C, bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate") }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
                        v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(v) {
                        throw error("unpaired surrogate")
                    }
                    out += Array(String(Character(Unicode.Scalar(v)!)).utf8)
                default: throw error("invalid escape")
                }
            default:
                guard c >= 0x20 else { throw error("control character in a string") }
                out.append(c)
            }
        }
    }
}
