/// Keeps the keys of one JSON object distinct, which a context-free grammar cannot: it follows
/// the output of one generation byte by byte (a JSON lexer over text the grammar already made
/// valid), remembers the keys of every object still open, and tells which tokens would close a
/// key equal to one already in the same object, so the mask can leave them out.
///
/// Why here and not in the grammar: "no key twice" depends on every earlier key of the object,
/// so it is state a pushdown automaton does not have. A schema's listed properties are distinct
/// by construction; the keys of extra members (`additionalProperties`, JSON mode) are the ones
/// a small model repeats.
///
/// Buffers grow only when a deeper nesting or more key bytes than ever before appear; checking
/// a token allocates nothing. Keys are compared as written (extra keys have no escapes).
struct JSONKeyTracker {
    static let object: UInt8 = 1
    static let array: UInt8 = 2

    /// The open containers, outermost first, and for each where its keys start in `keyEnds`.
    var kinds: [UInt8] = []
    var levelKeyStart: [Int32] = []
    /// The completed keys of the open objects, their bytes one after another: key i is
    /// `keyBytes[(i == 0 ? 0 : keyEnds[i - 1])..<keyEnds[i]]`; a key being written follows the last.
    var keyBytes: [UInt8] = []
    var keyEnds: [Int32] = []
    var lex = JSONLexState()

    // Scratch for `closesDuplicate`, sized once for the longest token.
    var probeKinds: [UInt8]
    /// Keys a probed token completes: (level tag, start, end) in the token's bytes.
    var probeKeys: [(tag: Int32, start: Int32, end: Int32)]

    init(maxTokenLength: Int) {
        probeKinds = [UInt8](repeating: 0, count: max(1, maxTokenLength))
        probeKeys = []
        probeKeys.reserveCapacity(max(1, maxTokenLength))
        kinds.reserveCapacity(16)
        levelKeyStart.reserveCapacity(16)
        keyBytes.reserveCapacity(256)
        keyEnds.reserveCapacity(32)
    }

    mutating func reset() {
        kinds.removeAll(keepingCapacity: true)
        levelKeyStart.removeAll(keepingCapacity: true)
        keyBytes.removeAll(keepingCapacity: true)
        keyEnds.removeAll(keepingCapacity: true)
        lex = JSONLexState()
    }

    /// Whether some token could close a key equal to an earlier one: an open object has a key.
    var hasKeys: Bool { !keyEnds.isEmpty }

    /// The start of the key being written in `keyBytes`.
    var partialStart: Int { keyEnds.last.map(Int.init) ?? 0 }

    /// The bytes of the keys of the object at `level` that were completed before this token.
    /// Level `level + 1`, when open, started after them.
    func keyRange(level: Int) -> Range<Int> {
        let first = Int(levelKeyStart[level])
        let last = level + 1 < levelKeyStart.count ? Int(levelKeyStart[level + 1]) : keyEnds.count
        return first..<last
    }

    func key(_ i: Int) -> ArraySlice<UInt8> {
        keyBytes[(i == 0 ? 0 : Int(keyEnds[i - 1]))..<Int(keyEnds[i])]
    }

    /// Follows the output over `bytes`.
    mutating func accept<C: Collection<UInt8>>(_ bytes: C) {
        for c in bytes {
            if lex.inString {
                if lex.endsString(c) {
                    if lex.isKey { keyEnds.append(Int32(keyBytes.count)) }
                    lex.isKey = false
                } else if lex.isKey {
                    keyBytes.append(c)
                }
                continue
            }
            switch c {
            case 0x7B, 0x5B:
                kinds.append(c == 0x7B ? Self.object : Self.array)
                levelKeyStart.append(Int32(keyEnds.count))
            case 0x7D, 0x5D:
                guard let start = levelKeyStart.popLast() else { continue }
                kinds.removeLast()
                keyEnds.removeSubrange(Int(start)...)
                keyBytes.removeSubrange(partialStart...)
            default:
                break
            }
            lex.structural(c, innermost: kinds.last ?? 0)
        }
    }

    /// Whether `token`, written next, would close a key equal to an earlier key of the same
    /// object (an earlier one in the output, or one the token itself wrote before it).
    mutating func closesDuplicate<C: RandomAccessCollection<UInt8>>(_ token: C) -> Bool where C.Index == Int {
        var depth = kinds.count  // open containers of the output still open in the token
        var local = 0  // containers the token opened, in `probeKinds[0..<local]`
        var lex = self.lex
        var keyStart = -1  // in the token; -1: the key began before it (`partialStart`)
        probeKeys.removeAll(keepingCapacity: true)
        var i = 0
        let base = token.startIndex
        func top() -> UInt8 { local > 0 ? probeKinds[local - 1] : depth > 0 ? kinds[depth - 1] : 0 }
        // Levels are tagged: an open container of the output by its index, the token's own by -1 - index.
        func tag() -> Int32 { local > 0 ? Int32(-local) : Int32(depth - 1) }
        while i < token.count {
            let c = token[base + i]
            defer { i += 1 }
            if lex.inString {
                if lex.endsString(c) {
                    if lex.isKey {
                        if isDuplicate(token, base: base, from: keyStart, to: i, tag: tag()) { return true }
                        if probeKeys.count < probeKinds.count {
                            probeKeys.append((tag(), Int32(keyStart), Int32(i)))
                        }
                    }
                    lex.isKey = false
                }
                continue
            }
            switch c {
            case 0x7B, 0x5B:
                guard local < probeKinds.count else { return false }
                probeKinds[local] = c == 0x7B ? Self.object : Self.array
                local += 1
            case 0x7D, 0x5D:
                let closed = tag()
                while let last = probeKeys.last, last.tag == closed { probeKeys.removeLast() }
                if local > 0 { local -= 1 } else if depth > 0 { depth -= 1 } else { return false }
            case 0x22:
                keyStart = i + 1
            default:
                break
            }
            lex.structural(c, innermost: top())
        }
        return false
    }

    /// Whether the key `token[from..<to]` (after the partial key when `from` is -1) equals an
    /// earlier key of the object tagged `tag`.
    func isDuplicate<C: RandomAccessCollection<UInt8>>(
        _ token: C, base: Int, from: Int, to: Int, tag: Int32
    ) -> Bool where C.Index == Int {
        let partial = from < 0 ? partialStart..<keyBytes.count : 0..<0
        let tail = (from < 0 ? 0 : from)..<to
        let length = partial.count + tail.count
        // The key spelled by `partial` then `tail`, byte `k`.
        func byte(_ k: Int) -> UInt8 {
            k < partial.count ? keyBytes[partial.lowerBound + k] : token[base + tail.lowerBound + k - partial.count]
        }
        if tag >= 0 {
            for k in keyRange(level: Int(tag)) {
                let existing = key(k)
                guard existing.count == length else { continue }
                var same = true
                var j = 0
                for b in existing {
                    if b != byte(j) {
                        same = false
                        break
                    }
                    j += 1
                }
                if same { return true }
            }
        }
        for earlier in probeKeys where earlier.tag == tag && Int(earlier.end - earlier.start) == length {
            var same = true
            for j in 0..<length where token[base + Int(earlier.start) + j] != byte(j) {
                same = false
                break
            }
            if same { return true }
        }
        return false
    }
}
