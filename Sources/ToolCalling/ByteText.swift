/// Byte-level helpers over an answer's UTF-8 (every position the parsers cut at is an ASCII
/// delimiter or the end, so the pieces are valid UTF-8).
enum ByteText {
    static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    static func skipSpace(_ b: [UInt8], _ p: Int, _ end: Int) -> Int {
        var q = p
        while q < end, isSpace(b[q]) { q += 1 }
        return q
    }

    /// How `word` compares with the text at `p`: all of it there (`.match`), the text ends
    /// inside it (`.partial`), or not (`.no`).
    static func match(_ word: [UInt8], in b: [UInt8], at p: Int, end: Int) -> OpenerMatch {
        for (i, c) in word.enumerated() {
            guard p + i < end else { return .partial }
            if b[p + i] != c { return .no }
        }
        return .match
    }

    static func hasPrefix(_ word: [UInt8], in b: [UInt8], at p: Int, end: Int) -> Bool {
        match(word, in: b, at: p, end: end) == .match
    }

    /// The first occurrence of `word` in `b[from..<end]`.
    static func find(_ word: [UInt8], in b: [UInt8], from: Int, end: Int) -> Int? {
        guard let first = word.first, end - from >= word.count else { return nil }
        var p = from
        while p + word.count <= end {
            if b[p] == first, hasPrefix(word, in: b, at: p, end: end) { return p }
            p += 1
        }
        return nil
    }

    /// The length of the longest suffix of `b[from..<end]` that is a proper prefix of `word`.
    static func partialSuffix(_ word: [UInt8], in b: [UInt8], from: Int, end: Int) -> Int {
        var n = min(word.count - 1, end - from)
        while n > 0 {
            if Array(b[(end - n)..<end]) == Array(word[0..<n]) { return n }
            n -= 1
        }
        return 0
    }

    static func string(_ b: [UInt8], _ range: Range<Int>) -> String {
        String(decoding: b[range], as: UTF8.self)
    }

    /// The text of `range` without surrounding whitespace.
    static func trimmed(_ b: [UInt8], _ range: Range<Int>) -> String {
        var lo = range.lowerBound
        var hi = range.upperBound
        while lo < hi, isSpace(b[lo]) { lo += 1 }
        while hi > lo, isSpace(b[hi - 1]) { hi -= 1 }
        return string(b, lo..<hi)
    }

    /// Matches `parts` in order at `p`, each a literal or (nil) optional whitespace.
    static func matchPattern(_ parts: [[UInt8]?], in b: [UInt8], at p: Int, end: Int) -> (OpenerMatch, Int) {
        var q = p
        for part in parts {
            if let word = part {
                let m = match(word, in: b, at: q, end: end)
                if m != .match { return (m, q) }
                q += word.count
            } else {
                q = skipSpace(b, q, end)
            }
        }
        return (.match, q)
    }
}
