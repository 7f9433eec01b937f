import GenerationVocabulary

extension JSONSchemaCompiler {
    /// A character inside a JSON string (escapes included).
    static var stringChar: GrammarExpression { .rule(JSONGrammar.stringChar) }

    // MARK: Strings

    /// A string of the schema that is none of `words` (from a `not`).
    mutating func string(_ schema: JSONValue, path: String, excluding words: [String]) throws(StructuredOutputError)
        -> GrammarExpression
    {
        let minLength = try nonNegativeInt(schema, "minLength", path: path)
        let maxLength = try nonNegativeInt(schema, "maxLength", path: path)
        // The contents between the quotes, and what restricts them beside the lengths.
        let content: GrammarExpression
        let source: String
        if let f = schema["format"] {
            guard case .string(let name) = f else {
                throw .invalidSchema(path: path + ".format", message: "must be a string")
            }
            if schema["pattern"] != nil { throw .unsupportedKeyword(keyword: "pattern", path: "\(path) (with format)") }
            guard let body = StringFormats.grammar(name) else {
                throw .unsupportedKeyword(keyword: "format", path: "\(path).format ('\(name)')")
            }
            (content, source) = (body, "format")
        } else if let p = schema["pattern"] {
            guard case .string(let regex) = p else {
                throw .invalidSchema(path: path + ".pattern", message: "must be a string")
            }
            do {
                content = try RegexParser.parse(regex)
            } catch {
                throw .unsupportedKeyword(keyword: "pattern", path: "\(path).pattern (\(error.message))")
            }
            source = "pattern"
        } else if !words.isEmpty {
            (content, source) = (contentOutside(words), "not")
        } else {
            if minLength == nil && maxLength == nil { return .rule(JSONGrammar.string) }
            if let minLength, let maxLength, minLength > maxLength { return .choice([]) }
            return .sequence([
                .text("\""), .repetition(Self.stringChar, minimum: minLength ?? 0, maximum: maxLength), .text("\""),
            ])
        }
        if !words.isEmpty && source != "not" {
            throw .unsupportedKeyword(keyword: "not", path: "\(path).not (a string value excluded beside a \(source))")
        }
        var restricted: GrammarExpression? = content
        if minLength != nil || maxLength != nil {
            var splits = Self.maxLengthSplits
            do {
                restricted = try restrict(content, minLength ?? 0, maxLength, splits: &splits)
            } catch {
                throw .unsupportedKeyword(
                    keyword: minLength != nil ? "minLength" : "maxLength",
                    path: "\(path) (with \(source): \(error.reason))")
            }
        }
        guard let restricted else { return .choice([]) }  // no string of the pattern has such a length
        return .sequence([.text("\""), restricted, .text("\"")])
    }

    // MARK: Numbers

    /// The bounds as integers: (lower, upper, exclusive either side). Non-integer bounds are
    /// beyond the documented subset.
    /// Integer bounds; for numbers, whether each side is exclusive.
    func bounds(_ schema: JSONValue, path: String, integer: Bool) throws(StructuredOutputError) -> (
        lo: Int64?, hi: Int64?, loExclusive: Bool, hiExclusive: Bool
    ) {
        var lo: Int64? = nil
        var hi: Int64? = nil
        var loExclusive = false
        var hiExclusive = false
        for key in ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"] {
            guard let v = schema[key] else { continue }
            let isMin = key.lowercased().hasSuffix("minimum")
            // Draft 4's form: `exclusiveMinimum: true` makes `minimum` exclusive (alone, no effect).
            if case .bool = v { continue }
            guard case .number(_, let d) = v, abs(d) < 1e15 else {
                throw .invalidSchema(path: "\(path).\(key)", message: "must be a number")
            }
            let isExclusive =
                key.hasPrefix("exclusive") || schema[isMin ? "exclusiveMinimum" : "exclusiveMaximum"] == .bool(true)
            var bound: Int64
            if d == d.rounded() {
                bound = Int64(d)
                if isExclusive {
                    if integer {
                        bound += isMin ? 1 : -1
                    } else if isMin {
                        loExclusive = true
                    } else {
                        hiExclusive = true
                    }
                }
            } else if integer {
                // An integer bound by a fraction: the nearest integer inside.
                bound = Int64(isMin ? d.rounded(.up) : d.rounded(.down))
            } else {
                throw .unsupportedKeyword(keyword: key, path: "\(path).\(key) (a non-integer bound on a number)")
            }
            if isMin { lo = max(lo ?? bound, bound) } else { hi = min(hi ?? bound, bound) }
        }
        return (lo, hi, loExclusive, hiExclusive)
    }

    /// The integers of the schema but `points` (from a `not`).
    mutating func integer(_ schema: JSONValue, path: String, excluding points: [Int64]) throws(StructuredOutputError)
        -> GrammarExpression
    {
        let (lo, hi, _, _) = try bounds(schema, path: path, integer: true)
        let cuts = Set(points).filter { p in lo.map { p >= $0 } ?? true }.filter { p in hi.map { p <= $0 } ?? true }
        if cuts.isEmpty { return lo == nil && hi == nil ? .rule(JSONGrammar.integer) : IntegerRanges.integers(lo, hi) }
        var pieces: [GrammarExpression] = []
        var from = lo
        for p in cuts.sorted() {
            if from.map({ $0 <= p - 1 }) ?? true { pieces.append(IntegerRanges.integers(from, p - 1)) }
            from = p + 1
        }
        if let from, hi.map({ from <= $0 }) ?? true { pieces.append(IntegerRanges.integers(from, hi)) }
        return pieces.count == 1 ? pieces[0] : .choice(pieces)
    }

    /// The numbers of the schema; with `nonInteger`, only those that are not integers (a
    /// `not: {type: integer}`): a fraction with a non-zero digit and no exponent.
    mutating func number(_ schema: JSONValue, path: String, nonInteger: Bool) throws(StructuredOutputError)
        -> GrammarExpression
    {
        let (lo, hi, loExclusive, hiExclusive) = try bounds(schema, path: path, integer: false)
        if lo == nil && hi == nil {
            return nonInteger ? .sequence([.rule(JSONGrammar.integer), Self.fraction]) : .rule(JSONGrammar.number)
        }
        // With bounds: no exponent, and a fraction only with a non-zero digit, so n.f lies
        // strictly between n and n + 1 and the integer part alone decides the bounds.
        let fraction = Self.fraction
        var options: [GrammarExpression] = []
        let intLo = loExclusive ? lo.map { $0 + 1 } : lo
        let intHi = hiExclusive ? hi.map { $0 - 1 } : hi
        if !nonInteger { options.append(IntegerRanges.integers(intLo, intHi)) }
        // n.f for n >= 0 lies in (n, n + 1): lo <= n and n + 1 <= hi.
        if hi.map({ $0 >= 1 }) ?? true {
            options.append(
                .sequence([IntegerRanges.naturals(UInt64(max(0, lo ?? 0)), hi.map { UInt64($0 - 1) }), fraction]))
        }
        // -n.f for n >= 1 lies in (-(n + 1), -n): -hi <= n and n + 1 <= -lo.
        if lo.map({ $0 <= -2 }) ?? true {
            let from = UInt64(max(1, hi.map { -$0 } ?? 1))
            let to = lo.map { UInt64(-$0 - 1) }
            if to.map({ $0 >= from }) ?? true {
                options.append(.sequence([.text("-"), IntegerRanges.naturals(from, to), fraction]))
            }
        }
        // -0.f lies in (-1, 0).
        if lo.map({ $0 <= -1 }) ?? true, hi.map({ $0 >= 0 }) ?? true {
            options.append(.sequence([.text("-0"), fraction]))
        }
        return .choice(options)
    }

    /// `.` and a fraction with a non-zero digit (so n.f lies strictly between n and n + 1), of
    /// at most `StructuredBounds.maxFractionDigits` digits: "0" (then the same, one digit
    /// fewer) or a non-zero digit then any digits, so one stack suffices.
    static var fraction: GrammarExpression {
        let digit = IntegerRanges.digit
        var zerosThenNonZero = GrammarExpression.byteSet([0x31...0x39])
        for used in stride(from: StructuredBounds.maxFractionDigits - 1, through: 0, by: -1) {
            let nonZero = GrammarExpression.sequence([
                .byteSet([0x31...0x39]),
                .repetition(digit, minimum: 0, maximum: StructuredBounds.maxFractionDigits - 1 - used),
            ])
            zerosThenNonZero =
                used == StructuredBounds.maxFractionDigits - 1
                ? nonZero : .choice([nonZero, .sequence([.text("0"), zerosThenNonZero])])
        }
        return .sequence([.text("."), zerosThenNonZero])
    }
}
