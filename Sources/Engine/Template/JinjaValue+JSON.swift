/// JSON text as a template value, keys in their written order (`tojson` writes them back in that
/// order, as Hugging Face's templates expect of tool schemas and call arguments). Strings are
/// data: a schema or an argument that spells a control token stays plain text.
extension JinjaValue {
    /// The value of `json`, or nil when it is not one complete JSON value.
    init?(json: String) {
        var reader = JSONReader(bytes: Array(json.utf8))
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        guard reader.index == reader.bytes.count else { return nil }
        self = value
    }
}

/// A small recursive reader over UTF-8 bytes: enough for the JSON the server itself produced or
/// checked (tool schemas, arguments, template variables), bounded in depth.
private struct JSONReader {
    let bytes: [UInt8]
    var index = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func value(depth: Int) -> JinjaValue? {
        guard depth < 64 else { return nil }
        skipSpace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return object(depth: depth)
        case UInt8(ascii: "["): return array(depth: depth)
        case UInt8(ascii: "\""): return string().map { .string($0, origin: .data) }
        case UInt8(ascii: "t"): return word("true", .bool(true))
        case UInt8(ascii: "f"): return word("false", .bool(false))
        case UInt8(ascii: "n"): return word("null", JinjaValue.none)
        default: return number()
        }
    }

    mutating func word(_ text: String, _ value: JinjaValue) -> JinjaValue? {
        let w = Array(text.utf8)
        guard bytes.count - index >= w.count, Array(bytes[index..<index + w.count]) == w else { return nil }
        index += w.count
        return value
    }

    mutating func object(depth: Int) -> JinjaValue? {
        index += 1
        var pairs: [(key: String, value: JinjaValue)] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .dict(pairs)
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            guard let v = value(depth: depth + 1) else { return nil }
            pairs.append((key, v))
            skipSpace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .dict(pairs)
            } else {
                return nil
            }
        }
    }

    mutating func array(depth: Int) -> JinjaValue? {
        index += 1
        var items: [JinjaValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .list(items)
        }
        while true {
            guard let v = value(depth: depth + 1) else { return nil }
            items.append(v)
            skipSpace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .list(items)
            } else {
                return nil
            }
        }
    }

    /// A string literal at `index` (its opening quote), escapes decoded.
    mutating func string() -> String? {
        index += 1
        var out = [UInt8]()
        while index < bytes.count {
            let b = bytes[index]
            index += 1
            switch b {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(scalar) {
                        // A high surrogate must be followed by an escaped low one.
                        guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { return nil }
                        index += 2
                        guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let s = Unicode.Scalar(scalar) else { return nil }
                    out.append(contentsOf: Array(String(Character(s)).utf8))
                default: out.append(e)  // \" \\ \/
                }
            default:
                out.append(b)
            }
        }
        return nil
    }

    mutating func hex4() -> UInt32? {
        guard bytes.count - index >= 4 else { return nil }
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let d = Character(Unicode.Scalar(bytes[index])).hexDigitValue else { return nil }
            v = v * 16 + UInt32(d)
            index += 1
        }
        return v
    }

    mutating func number() -> JinjaValue? {
        let start = index
        while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if let i = Int(text) { return .int(i) }
        if let d = Double(text), !text.isEmpty { return .double(d) }
        return nil
    }
}
