import GenerationVocabulary

/// Grammars for the decimal spellings (JSON's: no leading zeros, no `+`) of the integers in a
/// range, built digit by digit.
enum IntegerRanges {
    static let digit = GrammarExpression.byteSet([0x30...0x39])

    /// Integers in `lo...hi` (nil: unbounded that side).
    static func integers(_ lo: Int64?, _ hi: Int64?) -> GrammarExpression {
        if let lo, let hi, lo > hi { return .choice([]) }
        var options: [GrammarExpression] = []
        // Negative part: "-" then n in max(1, -hi) ... -lo.
        if lo.map({ $0 < 0 }) ?? true {
            let from = max(1, hi.map { $0 < 0 ? -$0 : 1 } ?? 1)
            let to = lo.map { -$0 }
            options.append(.sequence([.text("-"), naturals(UInt64(from), to.map(UInt64.init))]))
        }
        // Non-negative part: 0 ... hi.
        if hi.map({ $0 >= 0 }) ?? true {
            options.append(naturals(UInt64(max(0, lo ?? 0)), hi.map(UInt64.init)))
        }
        return options.count == 1 ? options[0] : .choice(options)
    }

    /// Non-negative integers in `lo...hi`; without `hi`, those of at most
    /// `StructuredBounds.maxIntegerDigits` digits (the schema's bound is exact, the default is not
    /// a number but a digit count).
    static func naturals(_ lo: UInt64, _ hi: UInt64?) -> GrammarExpression {
        if let hi, lo > hi { return .choice([]) }
        let loDigits = String(lo).count
        let hiDigits = hi.map { String($0).count }
        var options: [GrammarExpression] = []
        for length in loDigits...(hiDigits ?? loDigits) {
            let smallest: UInt64 = length == 1 ? 0 : power(length - 1)
            let largest: UInt64 = power(length) &- 1
            let a = max(lo, smallest)
            let b = min(hi ?? largest, largest)
            if a <= b { options.append(sameLength(Array(String(a).utf8), Array(String(b).utf8))) }
        }
        let maxDigits = StructuredBounds.maxIntegerDigits
        if hi == nil && loDigits < maxDigits {
            // Every longer number, up to the digit bound, as one counted repetition (one stack,
            // not one per length).
            options.append(
                .sequence([.byteSet([0x31...0x39]), .repetition(digit, minimum: loDigits, maximum: maxDigits - 1)]))
        }
        return options.count == 1 ? options[0] : .choice(options)
    }

    static func power(_ n: Int) -> UInt64 {
        var p: UInt64 = 1
        for _ in 0..<n { p = p &* 10 }
        return p
    }

    /// Digit strings of one length between `a` and `b` (as text, a <= b).
    static func sameLength(_ a: [UInt8], _ b: [UInt8]) -> GrammarExpression {
        let n = a.count
        if n == 1 { return .byteSet([a[0]...b[0]]) }
        if a[0] == b[0] { return .sequence([.literal([a[0]]), sameLength(Array(a[1...]), Array(b[1...]))]) }
        let restA = Array(a[1...])
        let restB = Array(b[1...])
        let zeros = [UInt8](repeating: 0x30, count: n - 1)
        let nines = [UInt8](repeating: 0x39, count: n - 1)
        if restA == zeros && restB == nines {
            return .sequence([.byteSet([a[0]...b[0]]), .repetition(digit, minimum: n - 1, maximum: n - 1)])
        }
        var options: [GrammarExpression] = [.sequence([.literal([a[0]]), sameLength(restA, nines)])]
        if a[0] + 1 <= b[0] - 1 {
            options.append(
                .sequence([.byteSet([(a[0] + 1)...(b[0] - 1)]), .repetition(digit, minimum: n - 1, maximum: n - 1)]))
        }
        options.append(.sequence([.literal([b[0]]), sameLength(zeros, restB)]))
        return .choice(options)
    }
}
