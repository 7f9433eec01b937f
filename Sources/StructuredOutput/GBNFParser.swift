import GenerationVocabulary

/// A parser for GBNF, the grammar notation llama.cpp's server takes in `grammar`:
/// `name ::= alternatives` rules (`root` is the start), `"literals"` with `\n \r \t \\ \" \xHH
/// \uHHHH \UHHHHHHHH` escapes, classes `[a-z]`/`[^…]`, `.` (any character), groups `( )`, `|`,
/// `* + ?`, `{m} {m,} {m,n}` and `#` comments. A rule ends at the end of its line unless a group
/// or a `|` continues it.
public struct GBNFParser {
    let s: [UInt32]
    var i = 0
    var rules: [String: GrammarExpression] = [:]

    public static func parse(_ source: String) throws(StructuredOutputError) -> Grammar {
        var p = GBNFParser(s: Array(source.unicodeScalars.map(\.value)))
        try p.parseRules()
        guard p.rules["root"] != nil else { throw p.failure("the grammar has no 'root' rule") }
        return Grammar(root: "root", rules: p.rules)
    }

    init(s: [UInt32]) {
        self.s = s
    }

    func failure(_ message: String) -> StructuredOutputError {
        var line = 1
        var column = 1
        for k in 0..<min(i, s.count) {
            if s[k] == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return .invalidGrammar(line: line, column: column, message: message)
    }

    var peek: UInt32? { i < s.count ? s[i] : nil }

    static func isNameChar(_ c: UInt32) -> Bool {
        (0x61...0x7A).contains(c) || (0x41...0x5A).contains(c) || (0x30...0x39).contains(c) || c == 0x2D || c == 0x5F
    }

    /// Skips spaces, tabs and comments; newlines too when `newlines`.
    mutating func space(newlines: Bool) {
        while let c = peek {
            if c == 0x20 || c == 0x09 || (newlines && (c == 0x0A || c == 0x0D)) {
                i += 1
            } else if c == 0x23 {
                while let d = peek, d != 0x0A { i += 1 }
            } else {
                return
            }
        }
    }

    mutating func name() throws(StructuredOutputError) -> String {
        let start = i
        while let c = peek, Self.isNameChar(c) { i += 1 }
        guard i > start else { throw failure("expected a rule name") }
        return String(String.UnicodeScalarView(s[start..<i].compactMap(Unicode.Scalar.init)))
    }

    mutating func parseRules() throws(StructuredOutputError) {
        space(newlines: true)
        while i < s.count {
            let n = try name()
            space(newlines: false)
            guard i + 2 < s.count, s[i] == 0x3A, s[i + 1] == 0x3A, s[i + 2] == 0x3D else {
                throw failure("expected '::='")
            }
            i += 3
            space(newlines: true)
            let body = try alternatives(nested: false)
            if rules[n] != nil { throw failure("rule '\(n)' is defined twice") }
            rules[n] = body
            guard peek == nil || peek == 0x0A || peek == 0x0D else { throw failure("unexpected character") }
            space(newlines: true)
        }
    }

    mutating func alternatives(nested: Bool) throws(StructuredOutputError) -> GrammarExpression {
        var options = [try sequence(nested: nested)]
        while true {
            if peek != 0x7C {
                // A `|` at the start of a following line continues the rule too.
                let save = i
                space(newlines: true)
                guard peek == 0x7C else {
                    i = save
                    break
                }
            }
            i += 1
            space(newlines: true)
            options.append(try sequence(nested: nested))
        }
        return options.count == 1 ? options[0] : .choice(options)
    }

    mutating func sequence(nested: Bool) throws(StructuredOutputError) -> GrammarExpression {
        var items: [GrammarExpression] = []
        while let c = peek, c != 0x7C, c != 0x29, c != 0x0A, c != 0x0D {
            let start = i
            var item: GrammarExpression
            switch c {
            case 0x22:  // "literal"
                i += 1
                var bytes: [UInt8] = []
                while true {
                    guard let d = peek else { throw failure("unterminated literal") }
                    if d == 0x22 { break }
                    let scalar = try character()
                    bytes += UTF8Ranges.encodeScalar(scalar)
                }
                i += 1
                item = .literal(bytes)
            case 0x5B:  // [class]
                i += 1
                var negated = false
                if peek == 0x5E {
                    negated = true
                    i += 1
                }
                var ranges: [ClosedRange<UInt32>] = []
                while true {
                    guard let d = peek else { throw failure("unterminated character class") }
                    if d == 0x5D { break }
                    let lo = try character()
                    if peek == 0x2D, i + 1 < s.count, s[i + 1] != 0x5D {
                        i += 1
                        let hi = try character()
                        guard hi >= lo else { throw failure("reversed range in a character class") }
                        ranges.append(lo...hi)
                    } else {
                        ranges.append(lo...lo)
                    }
                }
                i += 1
                item = .characters(ranges, negated: negated)
            case 0x2E:
                i += 1
                item = .characters([], negated: true)
            case 0x28:
                i += 1
                space(newlines: true)
                item = try alternatives(nested: true)
                guard peek == 0x29 else { throw failure("expected ')'") }
                i += 1
            case 0x3C:
                throw failure("token references <…> are not supported")
            default:
                guard Self.isNameChar(c) else { throw failure("unexpected character") }
                item = .rule(try name())
            }
            _ = start
            space(newlines: nested)
            item = try repetition(item, nested: nested)
            items.append(item)
        }
        return items.count == 1 ? items[0] : .sequence(items)
    }

    mutating func repetition(_ item: GrammarExpression, nested: Bool) throws(StructuredOutputError) -> GrammarExpression
    {
        var item = item
        while let c = peek {
            switch c {
            case 0x2A: item = .zeroOrMore(item)
            case 0x2B: item = .oneOrMore(item)
            case 0x3F: item = .optional(item)
            case 0x7B:
                i += 1
                space(newlines: false)
                guard let m = integer() else { throw failure("expected a number after '{'") }
                space(newlines: false)
                var n: Int? = m
                if peek == 0x2C {
                    i += 1
                    space(newlines: false)
                    n = integer()
                    space(newlines: false)
                }
                guard peek == 0x7D else { throw failure("expected '}'") }
                if let n, n < m { throw failure("{\(m),\(n)}: the maximum is below the minimum") }
                item = .repetition(item, minimum: m, maximum: n)
            default:
                return item
            }
            i += 1
            space(newlines: nested)
        }
        return item
    }

    mutating func integer() -> Int? {
        var v: Int? = nil
        while let c = peek, (0x30...0x39).contains(c), (v ?? 0) < 1_000_000 {
            v = (v ?? 0) * 10 + Int(c - 0x30)
            i += 1
        }
        return v
    }

    /// One character of a literal or class, escapes decoded.
    mutating func character() throws(StructuredOutputError) -> UInt32 {
        guard let c = peek else { throw failure("unexpected end") }
        i += 1
        guard c == 0x5C else { return c }
        guard let e = peek else { throw failure("unterminated escape") }
        i += 1
        switch e {
        case 0x6E: return 0x0A
        case 0x72: return 0x0D
        case 0x74: return 0x09
        case 0x5C, 0x22, 0x5B, 0x5D, 0x2D, 0x5E: return e
        case 0x78: return try hex(2)
        case 0x75: return try hex(4)
        case 0x55: return try hex(8)
        default: throw failure("unknown escape")
        }
    }

    mutating func hex(_ n: Int) throws(StructuredOutputError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<n {
            guard let c = peek else { throw failure("short hex escape") }
            let d: UInt32
            switch c {
            case 0x30...0x39: d = c - 0x30
            case 0x41...0x46: d = c - 0x41 + 10
            case 0x61...0x66: d = c - 0x61 + 10
            default: throw failure("invalid hex digit")
            }
            v = v * 16 + d
            i += 1
        }
        guard v <= 0x10FFFF else { throw failure("escape beyond U+10FFFF") }
        return v
    }
}
