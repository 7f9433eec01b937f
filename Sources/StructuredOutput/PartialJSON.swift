/// The value a prefix of a JSON text stands for so far, closed: open objects and arrays closed,
/// an unfinished string cut at its last complete character, an unfinished number, literal or key
/// left out (with its member). The result always serializes to valid JSON, and a longer prefix
/// never contradicts a shorter one's complete members (strings only grow, numbers appear whole).
public enum PartialJSON {
    /// Nil while not even the start of a value has arrived.
    public static func value(_ text: String) -> JSONValue? {
        var p = Parser(bytes: Array(text.utf8))
        return p.value(depth: 0).value
    }

    struct Parser {
        let bytes: [UInt8]
        var i = 0

        mutating func skipWhitespace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        var atEnd: Bool { i >= bytes.count }

        /// The value at `i` and whether it is complete (nil: nothing to show).
        mutating func value(depth: Int) -> (value: JSONValue?, complete: Bool) {
            skipWhitespace()
            guard !atEnd, depth < 512 else { return (nil, false) }
            switch bytes[i] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""):
                let (s, complete) = string()
                return (.string(s), complete)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func literal(_ word: String, _ v: JSONValue) -> (JSONValue?, Bool) {
            let w = Array(word.utf8)
            guard i + w.count <= bytes.count, Array(bytes[i..<i + w.count]) == w else {
                i = bytes.count
                return (nil, false)
            }
            i += w.count
            return (v, true)
        }

        mutating func number() -> (JSONValue?, Bool) {
            let start = i
            while i < bytes.count, Array("+-0123456789.eE".utf8).contains(bytes[i]) { i += 1 }
            // At the end of the text the number may still grow: left out.
            guard !atEnd else { return (nil, false) }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            guard let d = Double(text) else { return (nil, false) }
            return (.number(text, d), true)
        }

        /// The string's characters so far (an unfinished escape or UTF-8 sequence left out).
        mutating func string() -> (String, Bool) {
            i += 1
            var out: [UInt8] = []
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") {
                    i += 1
                    return (String(decoding: out, as: UTF8.self), true)
                }
                if c == UInt8(ascii: "\\") {
                    guard i + 1 < bytes.count else { break }
                    let e = bytes[i + 1]
                    switch e {
                    case UInt8(ascii: "u"):
                        guard i + 6 <= bytes.count,
                            let v = UInt32(String(decoding: bytes[(i + 2)..<(i + 6)], as: UTF8.self), radix: 16)
                        else {
                            i = bytes.count
                            return (String(decoding: out, as: UTF8.self), false)
                        }
                        if (0xD800...0xDBFF).contains(v) {
                            // A surrogate pair: both halves or nothing.
                            guard i + 12 <= bytes.count,
                                let low = UInt32(String(decoding: bytes[(i + 8)..<(i + 12)], as: UTF8.self), radix: 16),
                                let s = Unicode.Scalar(0x10000 + ((v - 0xD800) << 10) + (low &- 0xDC00))
                            else {
                                i = bytes.count
                                return (String(decoding: out, as: UTF8.self), false)
                            }
                            out += Array(String(Character(s)).utf8)
                            i += 12
                        } else {
                            out += Array(String(Character(Unicode.Scalar(v) ?? "\u{FFFD}")).utf8)
                            i += 6
                        }
                        continue
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    default: out.append(e)
                    }
                    i += 2
                    continue
                }
                out.append(c)
                i += 1
            }
            i = bytes.count
            // Cut an unfinished UTF-8 sequence at the end.
            var end = out.count
            var k = out.count - 1
            while k >= 0 && out[k] & 0xC0 == 0x80 { k -= 1 }
            if k >= 0 {
                let lead = out[k]
                let need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
                if out.count - k < need { end = k }
            }
            return (String(decoding: out[..<end], as: UTF8.self), false)
        }

        mutating func object(depth: Int) -> (JSONValue?, Bool) {
            i += 1
            var members: [JSONValue.Member] = []
            while true {
                skipWhitespace()
                guard !atEnd else { return (.object(members), false) }
                if bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    return (.object(members), true)
                }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                guard bytes[i] == UInt8(ascii: "\"") else { return (.object(members), false) }
                let (key, keyComplete) = string()
                skipWhitespace()
                guard keyComplete, !atEnd, bytes[i] == UInt8(ascii: ":") else { return (.object(members), false) }
                i += 1
                let (v, complete) = value(depth: depth + 1)
                if let v { members.append(JSONValue.Member(key, v)) }
                if !complete { return (.object(members), false) }
            }
        }

        mutating func array(depth: Int) -> (JSONValue?, Bool) {
            i += 1
            var items: [JSONValue] = []
            while true {
                skipWhitespace()
                guard !atEnd else { return (.array(items), false) }
                if bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    return (.array(items), true)
                }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                let (v, complete) = value(depth: depth + 1)
                if let v { items.append(v) }
                if !complete { return (.array(items), false) }
            }
        }
    }
}

extension JSONValue: Codable {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public func encode(to encoder: Encoder) throws {
        switch self {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .bool(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .number(let text, let d):
            var c = encoder.singleValueContainer()
            if let i = Int64(text) { try c.encode(i) } else { try c.encode(d) }
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case .array(let items):
            var c = encoder.unkeyedContainer()
            for item in items { try c.encode(item) }
        case .object(let members):
            var c = encoder.container(keyedBy: Key.self)
            for m in members { try c.encode(m.value, forKey: Key(stringValue: m.key)) }
        }
    }

    public init(from decoder: Decoder) throws {
        if let c = try? decoder.container(keyedBy: Key.self) {
            var members: [Member] = []
            for key in c.allKeys { members.append(Member(key.stringValue, try c.decode(JSONValue.self, forKey: key))) }
            self = .object(members)
            return
        }
        if var c = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !c.isAtEnd { items.append(try c.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .number(String(i), Double(i))
        } else if let d = try? c.decode(Double.self) {
            self = .number("\(d)", d)
        } else {
            self = .string(try c.decode(String.self))
        }
    }
}
