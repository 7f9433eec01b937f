import GenerationVocabulary

/// `minLength`/`maxLength` beside `pattern`, a `format`, or a `not` that excludes strings:
/// the string's contents restricted to the length range, exactly.
///
/// Lengths count characters (an escape counts as one), as JSON Schema does. Every piece of
/// these grammars has lengths the compiler can count (`span`): a character class or a JSON
/// string character is one, a literal its characters, a repetition its count times its unit's.
/// The restriction goes top down:
///
/// - a piece whose lengths all lie in the range is kept as it is (a length the pattern already
///   implies changes nothing: the grammar is the pattern's own), one whose lengths all lie
///   outside is dropped, a choice keeps what its options keep;
/// - a repetition of a unit of one length has its count narrowed (`[a-z]+`, `{1,33}`, under
///   `maxLength: 10` becomes `{1,10}`; base64's groups of 4 under `maxLength: 12`, `{0,3}`);
///   a repetition of units of different lengths is unrolled one unit at a time;
/// - a sequence gives the range, shifted, to its one variable part when the others have one
///   length (`^[A-Z]{2}-[0-9]+$`); with two variable parts, the first part's lengths for which
///   the rest fits whole are one option, and every other length of the first part one option of
///   its own (`^[a-z]+-[a-z]+$` under `maxLength: 20`: 18 options).
///
/// That last step multiplies when several variable parts must share a tight `maxLength`
/// (`^[a-z]+(-[a-z]+)*$` under `maxLength: 63`): past `maxLengthSplits` options in all, the
/// schema is refused naming the length keyword, rather than compiled to a grammar too large to
/// mask quickly or loosened.
extension JSONSchemaCompiler {
    /// The most options one restriction may split into.
    static let maxLengthSplits = 256

    /// Why a restriction cannot be built.
    struct LengthFailure: Error {
        let reason: String
    }

    /// The fewest and the most characters (nil: no limit) of a piece of string contents.
    struct Span: Equatable {
        var lo: Int
        var hi: Int?

        func within(_ lo: Int, _ hi: Int?) -> Bool {
            self.lo >= lo && (hi.map { h in self.hi.map { $0 <= h } ?? false } ?? true)
        }

        func outside(_ lo: Int, _ hi: Int?) -> Bool {
            (hi.map { self.lo > $0 } ?? false) || (self.hi.map { $0 < lo } ?? false)
        }
    }

    /// The lengths of what `e` matches (nil: it matches nothing).
    func span(_ e: GrammarExpression) throws(LengthFailure) -> Span? {
        switch e {
        case .literal(let bytes):
            let n = try Self.characterCount(bytes)
            return Span(lo: n, hi: n)
        case .byteSet(let ranges):
            if ranges.isEmpty { return nil }
            // Formats are ASCII: a byte is a character.
            guard ranges.allSatisfy({ $0.upperBound < 0x80 }) else {
                throw LengthFailure(reason: "a byte that is part of a character")
            }
            return Span(lo: 1, hi: 1)
        case .characters(let ranges, let negated):
            return negated || !ranges.isEmpty ? Span(lo: 1, hi: 1) : nil
        case .sequence(let parts):
            var out = Span(lo: 0, hi: 0)
            for p in parts {
                guard let s = try span(p) else { return nil }
                out.lo += s.lo
                out.hi = out.hi.flatMap { h in s.hi.map { h + $0 } }
            }
            return out
        case .choice(let options):
            var out: Span? = nil
            for o in options {
                guard let s = try span(o) else { continue }
                out = out.map { Span(lo: min($0.lo, s.lo), hi: $0.hi.flatMap { h in s.hi.map { max(h, $0) } }) } ?? s
            }
            return out
        case .repetition(let inner, let minimum, let maximum):
            guard let s = try span(inner) else { return minimum == 0 ? Span(lo: 0, hi: 0) : nil }
            let hi: Int? =
                if maximum == 0 || s.hi == 0 { 0 } else if let maximum, let h = s.hi { maximum * h } else { nil }
            return Span(lo: minimum * s.lo, hi: hi)
        case .rule(let name):
            guard characterRules.contains(name) else { throw LengthFailure(reason: "rule '\(name)' is not counted") }
            return Span(lo: 1, hi: 1)
        }
    }

    /// The characters of JSON string contents: an escape is one, a UTF-8 sequence one.
    static func characterCount(_ bytes: [UInt8]) throws(LengthFailure) -> Int {
        var i = 0
        var n = 0
        while i < bytes.count {
            if bytes[i] == 0x5C {
                i += i + 1 < bytes.count && bytes[i + 1] == 0x75 ? 6 : 2
                guard i <= bytes.count else { throw LengthFailure(reason: "an unfinished escape") }
            } else {
                i += 1
                while i < bytes.count && bytes[i] & 0xC0 == 0x80 { i += 1 }
            }
            n += 1
        }
        return n
    }

    /// What `e` matches with `lo` to `hi` (nil: any number of) characters; nil when nothing.
    func restrict(_ e: GrammarExpression, _ lo: Int, _ hi: Int?, splits: inout Int) throws(LengthFailure)
        -> GrammarExpression?
    {
        let lo = max(lo, 0)
        guard let s = try span(e), !s.outside(lo, hi) else { return nil }
        if s.within(lo, hi) { return e }
        switch e {
        case .choice(let options):
            var kept: [GrammarExpression] = []
            for o in options {
                if let r = try restrict(o, lo, hi, splits: &splits) { kept.append(r) }
            }
            return kept.isEmpty ? nil : kept.count == 1 ? kept[0] : .choice(kept)
        case .sequence(let parts):
            return try restrictSequence(parts[...], lo, hi, splits: &splits)
        case .repetition(let inner, let minimum, let maximum):
            guard let unit = try span(inner) else { return nil }
            if unit.hi == unit.lo {
                // n > 0: a unit of no characters spans 0 and was kept or dropped above.
                let n = unit.lo
                let from = max(minimum, (lo + n - 1) / n)
                let to = [maximum, hi.map { $0 / n }].compactMap { $0 }.min()
                if let to, to < from { return nil }
                return .repetition(inner, minimum: from, maximum: to)
            }
            guard let maximum else {
                throw LengthFailure(reason: "an unbounded repetition of parts of different lengths")
            }
            let more = GrammarExpression.repetition(inner, minimum: max(minimum - 1, 0), maximum: maximum - 1)
            let some = try restrictSequence([inner, more][...], lo, hi, splits: &splits)
            guard minimum == 0, lo == 0 else { return some }
            return some.map { .choice([.empty, $0]) } ?? .empty
        default:
            return nil  // one length: kept or dropped above
        }
    }

    /// A sequence of `parts` with `lo` to `hi` characters in all.
    func restrictSequence(_ parts: ArraySlice<GrammarExpression>, _ lo: Int, _ hi: Int?, splits: inout Int)
        throws(LengthFailure) -> GrammarExpression?
    {
        guard let x = parts.first else { return lo <= 0 && (hi ?? 0) >= 0 ? .empty : nil }
        let restParts = parts.dropFirst()
        if restParts.isEmpty { return try restrict(x, lo, hi, splits: &splits) }
        let rest = GrammarExpression.sequence(Array(restParts))
        func join(_ a: GrammarExpression, _ b: GrammarExpression) -> GrammarExpression {
            if case .sequence(let tail) = b { return .sequence([a] + tail) }
            return .sequence([a, b])
        }
        guard let first = try span(x), let others = try span(rest) else { return nil }
        if first.hi == first.lo {
            return try restrictSequence(restParts, lo - first.lo, hi.map { $0 - first.lo }, splits: &splits)
                .map { join(x, $0) }
        }
        if others.hi == others.lo {
            return try restrict(x, lo - others.lo, hi.map { $0 - others.lo }, splits: &splits).map { join($0, rest) }
        }
        var options: [GrammarExpression] = []
        // The lengths l of the first part for which every length of the rest fits:
        // l >= lo - others.lo and l + others.hi <= hi.
        let fitLo = max(first.lo, lo - others.lo)
        var fitHi = first.hi
        var fits = true
        if let hi {
            if let most = others.hi { fitHi = [first.hi, hi - most].compactMap { $0 }.min() } else { fits = false }
        }
        if let fitHi, fitHi < fitLo { fits = false }
        if fits, let r = try restrict(x, fitLo, fitHi, splits: &splits) { options.append(join(r, rest)) }
        // Every other length of the first part that leaves the rest room, an option each.
        let top = [first.hi, hi.map { $0 - others.lo }].compactMap { $0 }.min() ?? (fitLo - 1)
        if top >= first.lo {
            for l in first.lo...top {
                if fits && l >= fitLo && (fitHi.map { l <= $0 } ?? true) { continue }
                splits -= 1
                if splits < 0 {
                    throw LengthFailure(reason: "more than \(Self.maxLengthSplits) ways to split the length")
                }
                guard let a = try restrict(x, l, l, splits: &splits),
                    let b = try restrictSequence(restParts, lo - l, hi.map { $0 - l }, splits: &splits)
                else { continue }
                options.append(join(a, b))
            }
        }
        return options.isEmpty ? nil : options.count == 1 ? options[0] : .choice(options)
    }
}
