/// Converts a pythonic call's keyword arguments (`a=1, b='x', c=True)`) to a JSON object's text
/// (`{"a": 1, "b": "x", "c": true}`) as far as the text goes, so that the JSON of a longer text
/// starts with the JSON of a shorter one: output is written only once it cannot change
/// (`True` once the word ended, `, ` once the next item starts), strings character by character.
///
/// Python literals: strings in either quote (escapes `\n \t \r \\ \' \" \uXXXX \xHH`), numbers
/// (a leading `+` dropped), `True`/`False`/`None`, lists and tuples (as arrays), dicts with
/// string keys. Positional arguments are not supported (malformed).
struct PythonicArguments {
    enum Stop: Error {
        /// The text ended first.
        case incomplete
        /// Not a pythonic argument list.
        case malformed
    }

    let b: [UInt8]
    let end: Int
    var p: Int
    var out: [UInt8] = []
    /// Nesting of lists and dicts, bounded so a malformed text cannot recurse deeply.
    var depth = 0

    init(_ b: [UInt8], from p: Int, end: Int) {
        self.b = b
        self.p = p
        self.end = end
    }

    /// Reads up to and including `)`: the JSON so far, and whether the call closed (`Stop` otherwise).
    static func convert(_ b: [UInt8], from p: Int, end: Int) -> (json: String, end: Int?, malformed: Bool) {
        var c = PythonicArguments(b, from: p, end: end)
        do {
            try c.arguments()
            return (String(decoding: c.out, as: UTF8.self), c.p, false)
        } catch {
            return (String(decoding: c.out, as: UTF8.self), nil, error == .malformed)
        }
    }

    mutating func skipSpace() { p = ByteText.skipSpace(b, p, end) }

    mutating func peek() throws(Stop) -> UInt8 {
        skipSpace()
        guard p < end else { throw .incomplete }
        return b[p]
    }

    static func isIdentifier(_ c: UInt8, first: Bool) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || (!first && c >= 0x30 && c <= 0x39)
    }

    /// A whole identifier: the text must go on past it.
    mutating func identifier() throws(Stop) -> String {
        let start = p
        guard p < end, Self.isIdentifier(b[p], first: true) else { throw .malformed }
        while p < end, Self.isIdentifier(b[p], first: false) { p += 1 }
        guard p < end else { throw .incomplete }
        return String(decoding: b[start..<p], as: UTF8.self)
    }

    mutating func emit(_ s: String) { out += Array(s.utf8) }

    mutating func arguments() throws(Stop) {
        emit("{")
        var first = true
        while true {
            var c = try peek()
            if c == 0x29 {
                p += 1
                emit("}")
                return
            }
            if !first {
                guard c == 0x2C else { throw .malformed }
                p += 1
                c = try peek()
                if c == 0x29 { continue }
            }
            let key = try identifier()
            guard try peek() == 0x3D else { throw .malformed }
            p += 1
            emit(first ? "" : ", ")
            first = false
            writeString(Array(key.utf8))
            emit(": ")
            _ = try peek()
            try value()
        }
    }

    mutating func writeString(_ s: [UInt8]) {
        out.append(0x22)
        for c in s { escape(c) }
        out.append(0x22)
    }

    /// One byte of a string's content, escaped as JSON needs.
    mutating func escape(_ c: UInt8) {
        switch c {
        case 0x22: emit("\\\"")
        case 0x5C: emit("\\\\")
        case 0x0A: emit("\\n")
        case 0x09: emit("\\t")
        case 0x0D: emit("\\r")
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            out += Array("\\u00".utf8) + [hex[Int(c >> 4)], hex[Int(c & 15)]]
        default: out.append(c)
        }
    }

    mutating func value() throws(Stop) {
        let c = b[p]
        switch c {
        case 0x22, 0x27: try string(quote: c)
        case 0x5B, 0x28: try list(close: c == 0x5B ? 0x5D : 0x29)
        case 0x7B: try dict()
        case 0x2D, 0x2B, 0x30...0x39: try number()
        default:
            let word = try identifier()
            switch word {
            case "True": emit("true")
            case "False": emit("false")
            case "None": emit("null")
            default: throw .malformed
            }
        }
    }

    mutating func string(quote: UInt8) throws(Stop) {
        p += 1
        out.append(0x22)
        while p < end {
            let c = b[p]
            if c == quote {
                p += 1
                out.append(0x22)
                return
            }
            guard c == 0x5C else {
                escape(c)
                p += 1
                continue
            }
            guard p + 1 < end else { throw .incomplete }
            let e = b[p + 1]
            switch e {
            case 0x6E: emit("\\n")
            case 0x74: emit("\\t")
            case 0x72: emit("\\r")
            case 0x75, 0x78:
                let n = e == 0x75 ? 4 : 2
                guard p + 2 + n <= end else { throw .incomplete }
                let digits = b[(p + 2)..<(p + 2 + n)]
                guard digits.allSatisfy({ Self.isHex($0) }) else { throw .malformed }
                emit(n == 4 ? "\\u" : "\\u00")
                out += digits
                p += 2 + n
                continue
            default: escape(e)  // \\ \' \" and unknown escapes: the character itself
            }
            p += 2
        }
        throw .incomplete
    }

    static func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
    }

    mutating func number() throws(Stop) {
        if b[p] == 0x2B { p += 1 }
        while p < end {
            let c = b[p]
            guard (c >= 0x30 && c <= 0x39) || c == 0x2E || c == 0x2D || c == 0x2B || c == 0x65 || c == 0x45 else {
                return
            }
            out.append(c)
            p += 1
        }
        throw .incomplete
    }

    mutating func list(close: UInt8) throws(Stop) {
        depth += 1
        guard depth <= 64 else { throw .malformed }
        p += 1
        emit("[")
        var first = true
        while true {
            var c = try peek()
            if c == close {
                p += 1
                emit("]")
                depth -= 1
                return
            }
            if !first {
                guard c == 0x2C else { throw .malformed }
                p += 1
                c = try peek()
                if c == close { continue }
            }
            emit(first ? "" : ", ")
            first = false
            try value()
        }
    }

    mutating func dict() throws(Stop) {
        depth += 1
        guard depth <= 64 else { throw .malformed }
        p += 1
        emit("{")
        var first = true
        while true {
            var c = try peek()
            if c == 0x7D {
                p += 1
                emit("}")
                depth -= 1
                return
            }
            if !first {
                guard c == 0x2C else { throw .malformed }
                p += 1
                c = try peek()
                if c == 0x7D { continue }
            }
            guard c == 0x22 || c == 0x27 else { throw .malformed }
            emit(first ? "" : ", ")
            first = false
            try string(quote: c)
            guard try peek() == 0x3A else { throw .malformed }
            p += 1
            emit(": ")
            _ = try peek()
            try value()
        }
    }
}
