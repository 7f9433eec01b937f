import GenerationVocabulary

/// The regular-expression subset `pattern` supports, compiled to the JSON-string contents
/// whose decoded text matches: literals, `.`, classes `[a-z]`/`[^…]`, `\d \w \s \D \W \S`,
/// escaped punctuation, groups `( )`/`(?: )`, `|`, and `* + ? {m} {m,} {m,n}`; `^`/`$` only at
/// the ends. Without `^` (or `$`) the match may start (or end) anywhere, as JSON Schema says
/// (that free text is any string, unbounded as a string without `maxLength` is). Unbounded
/// repetitions are bounded by `StructuredBounds.maxPatternRepetitions`.
/// Classes never match `"`, `\` or control characters (those would need escapes in JSON).
struct RegexParser {
    struct Failure: Error {
        let message: String
    }

    let scalars: [UInt32]
    var index = 0

    /// Characters a class may produce: not controls, `"` or `\`.
    static let unsafe: [ClosedRange<UInt32>] = [0...0x1F, 0x22...0x22, 0x5C...0x5C]

    static func parse(_ source: String) throws(Failure) -> GrammarExpression {
        var s = Array(source.unicodeScalars.map(\.value))
        let anchoredStart = s.first == 0x5E
        if anchoredStart { s.removeFirst() }
        var anchoredEnd = false
        if s.last == 0x24 && (s.count < 2 || s[s.count - 2] != 0x5C) {
            anchoredEnd = true
            s.removeLast()
        }
        var p = RegexParser(scalars: s)
        let body = try p.alternation()
        guard p.index == s.count else { throw Failure(message: "unexpected ')' at \(p.index)") }
        let any = GrammarExpression.zeroOrMore(.rule(JSONGrammar.stringChar))
        return .sequence((anchoredStart ? [] : [any]) + [body] + (anchoredEnd ? [] : [any]))
    }

    var atEnd: Bool { index >= scalars.count }
    var peek: UInt32? { atEnd ? nil : scalars[index] }

    mutating func alternation() throws(Failure) -> GrammarExpression {
        var options = [try sequence()]
        while peek == 0x7C {
            index += 1
            options.append(try sequence())
        }
        return options.count == 1 ? options[0] : .choice(options)
    }

    mutating func sequence() throws(Failure) -> GrammarExpression {
        var items: [GrammarExpression] = []
        while let c = peek, c != 0x7C, c != 0x29 {
            var atom = try self.atom()
            atom = try quantified(atom)
            items.append(atom)
        }
        return .sequence(items)
    }

    mutating func quantified(_ atom: GrammarExpression) throws(Failure) -> GrammarExpression {
        guard let c = peek else { return atom }
        // `*`, `+` and `{m,}` allow at most `maxPatternRepetitions` more than they require: a
        // model would otherwise repeat them forever (digits, path segments).
        let more = StructuredBounds.maxPatternRepetitions
        var result: GrammarExpression
        switch c {
        case 0x2A: index += 1; result = .repetition(atom, minimum: 0, maximum: more)
        case 0x2B: index += 1; result = .repetition(atom, minimum: 1, maximum: 1 + more)
        case 0x3F: index += 1; result = .optional(atom)
        case 0x7B:
            index += 1
            let m = number()
            var n: Int? = m
            if peek == 0x2C {
                index += 1
                n = number()
            }
            guard let m, peek == 0x7D else { throw Failure(message: "invalid {m,n} at \(index)") }
            index += 1
            if let n, n < m { throw Failure(message: "{\(m),\(n)} is empty") }
            result = .repetition(atom, minimum: m, maximum: n ?? m + more)
        default: return atom
        }
        if peek == 0x3F || peek == 0x2B { throw Failure(message: "lazy and possessive quantifiers are not supported") }
        return result
    }

    mutating func number() -> Int? {
        var v: Int? = nil
        while let c = peek, (0x30...0x39).contains(c) {
            v = (v ?? 0) * 10 + Int(c - 0x30)
            index += 1
            if v! > 10_000 { return v }
        }
        return v
    }

    /// One character as JSON-string content: its escape when it needs one.
    static func literal(_ c: UInt32) -> GrammarExpression {
        switch c {
        case 0x22: return .text("\\\"")
        case 0x5C: return .text("\\\\")
        case 0x0A: return .text("\\n")
        case 0x09: return .text("\\t")
        case 0x0D: return .text("\\r")
        default:
            if c < 0x20 { return .text("\\u00" + (c < 0x10 ? "0" : "") + String(c, radix: 16)) }
            return .characters([c...c], negated: false)
        }
    }

    static func classExpression(_ ranges: [ClosedRange<UInt32>], negated: Bool) -> GrammarExpression {
        if negated { return .characters(ranges + unsafe, negated: true) }
        let safe = UTF8Ranges.subtracting(ranges, unsafe)
        return .characters(safe, negated: false)
    }

    static let digitRanges: [ClosedRange<UInt32>] = [0x30...0x39]
    static let wordRanges: [ClosedRange<UInt32>] = [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]
    static let spaceRanges: [ClosedRange<UInt32>] = [0x09...0x0D, 0x20...0x20]

    /// The class of `\d`, `\w`, `\s` (and negations), or nil for another escape.
    static func shorthand(_ c: UInt32) -> (ranges: [ClosedRange<UInt32>], negated: Bool)? {
        switch c {
        case 0x64: (digitRanges, false)
        case 0x44: (digitRanges, true)
        case 0x77: (wordRanges, false)
        case 0x57: (wordRanges, true)
        case 0x73: (spaceRanges, false)
        case 0x53: (spaceRanges, true)
        default: nil
        }
    }

    mutating func escaped() throws(Failure) -> UInt32 {
        guard let c = peek else { throw Failure(message: "trailing backslash") }
        index += 1
        switch c {
        case 0x6E: return 0x0A
        case 0x74: return 0x09
        case 0x72: return 0x0D
        default:
            let isAlnum = (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
            if isAlnum { throw Failure(message: "escape \\\(Character(Unicode.Scalar(c)!)) is not supported") }
            return c
        }
    }

    mutating func atom() throws(Failure) -> GrammarExpression {
        let c = scalars[index]
        index += 1
        switch c {
        case 0x28:  // (
            if peek == 0x3F {
                guard index + 1 < scalars.count, scalars[index + 1] == 0x3A else {
                    throw Failure(message: "only (?: ) groups are supported")
                }
                index += 2
            }
            let inner = try alternation()
            guard peek == 0x29 else { throw Failure(message: "missing ')'") }
            index += 1
            return inner
        case 0x2E:  // .
            return Self.classExpression([0x0A...0x0A], negated: true)
        case 0x5B:
            return try characterClass()
        case 0x5C:
            if let c = peek, let s = Self.shorthand(c) {
                index += 1
                return Self.classExpression(s.ranges, negated: s.negated)
            }
            return Self.literal(try escaped())
        case 0x5E, 0x24:
            throw Failure(message: "anchors are only supported at the ends")
        case 0x2A, 0x2B, 0x3F, 0x7B:
            throw Failure(message: "nothing to repeat at \(index - 1)")
        default:
            return Self.literal(c)
        }
    }

    mutating func characterClass() throws(Failure) -> GrammarExpression {
        var negated = false
        if peek == 0x5E {
            negated = true
            index += 1
        }
        var ranges: [ClosedRange<UInt32>] = []
        var first = true
        while true {
            guard let c = peek else { throw Failure(message: "missing ']'") }
            if c == 0x5D && !first { break }
            first = false
            index += 1
            var lo = c
            if c == 0x5C {
                if let e = peek, let s = Self.shorthand(e) {
                    index += 1
                    guard !s.negated else {
                        throw Failure(message: "negated shorthands inside a class are not supported")
                    }
                    ranges += s.ranges
                    continue
                }
                lo = try escaped()
            }
            if peek == 0x2D, index + 1 < scalars.count, scalars[index + 1] != 0x5D {
                index += 1
                var hi = scalars[index]
                index += 1
                if hi == 0x5C { hi = try escaped() }
                guard hi >= lo else { throw Failure(message: "reversed range in a class") }
                ranges.append(lo...hi)
            } else {
                ranges.append(lo...lo)
            }
        }
        index += 1
        return Self.classExpression(ranges, negated: negated)
    }
}
