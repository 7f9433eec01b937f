import Telemetry

/// What a vocabulary looks like through one grammar unit (`UnitRule`, e.g. one JSON string
/// character): for every token, whether its bytes are whole units and how many, and the tokens
/// that are not (a quote, a control byte, half a UTF-8 sequence) as a trie of their own. With the
/// default model's 49,152 tokens and the JSON string character, 671 tokens are not whole
/// characters, so a mask inside a string is a copy of a precomputed bit set plus a walk of a
/// small trie. Built once per vocabulary and unit, shared by every grammar with that unit.
final class UnitTable: Sendable {
    /// The unit's bytes as an automaton: `next[q * 256 + b]` is the state after byte `b` in
    /// state `q` (0 is the start, between units), `done` when the byte completes a unit, `dead`
    /// when it cannot continue one.
    let next: [Int32]
    static let dead: Int32 = -1
    static let done: Int32 = -2
    /// The shortest unit: fed to the matcher to reach the state after `c` units.
    let representative: [UInt8]
    /// Tokens made of whole units: all of them, and those of at most `c` units for
    /// `c <= cumulativeLimit` (`words` per `c`), and the ones longer than that by length.
    let words: Int
    let pure: [UInt64]
    let cumulative: [UInt64]
    static let cumulativeLimit = 32
    let longTokens: [(id: Int32, units: Int32)]
    let maxUnits: Int32
    /// The other tokens.
    let rest: TokenTrie

    /// Nil when the unit is not a finite, prefix-free byte language (then it cannot be counted).
    init?(grammar: CompiledGrammar, unit: UnitRule, trie: TokenTrie) {
        guard let next = unit.isByteSet ? Self.byteSetAutomaton(grammar, unit) : Self.ruleAutomaton(grammar, unit)
        else {
            return nil
        }
        self.next = next
        // The shortest unit, smallest bytes first.
        var paths: [[UInt8]] = [[]]
        var visited: Set<Int32> = [0]
        var found: [UInt8]? = nil
        var p = 0
        search: while p < paths.count {
            let path = paths[p]
            p += 1
            var q: Int32 = 0
            for b in path { q = next[Int(q) * 256 + Int(b)] }
            for b in 0...255 {
                let t = next[Int(q) * 256 + b]
                if t == Self.done {
                    found = path + [UInt8(b)]
                    break search
                }
                if t >= 0 && !visited.contains(t) {
                    visited.insert(t)
                    paths.append(path + [UInt8(b)])
                }
            }
        }
        guard let representative = found else { return nil }
        self.representative = representative
        // Each token through the automaton.
        let vocabulary = trie.vocabularySize
        let words = (vocabulary + 63) / 64
        self.words = words
        var pure = [UInt64](repeating: 0, count: words)
        var counts = [Int32](repeating: 0, count: vocabulary)
        var others = [Bool](repeating: false, count: vocabulary)
        var maxUnits: Int32 = 0
        for id in 0..<vocabulary {
            guard let bytes = trie.tokenBytes(Int32(id)) else { continue }
            var q: Int32 = 0
            var c: Int32 = 0
            for b in bytes {
                let t = next[Int(q) * 256 + Int(b)]
                if t == Self.dead {
                    q = -1
                    break
                }
                if t == Self.done {
                    c += 1
                    q = 0
                } else {
                    q = t
                }
            }
            if q == 0 {
                pure[id >> 6] |= 1 << UInt64(id & 63)
                counts[id] = c
                maxUnits = max(maxUnits, c)
            } else {
                others[id] = true
            }
        }
        self.pure = pure
        self.maxUnits = maxUnits
        var cumulative = [UInt64](repeating: 0, count: words * (Self.cumulativeLimit + 1))
        var long: [(id: Int32, units: Int32)] = []
        for id in 0..<vocabulary where counts[id] > 0 {
            let c = Int(counts[id])
            if c > Self.cumulativeLimit { long.append((Int32(id), counts[id])) }
            for limit in stride(from: c, through: Self.cumulativeLimit, by: 1) {
                cumulative[limit * words + (id >> 6)] |= 1 << UInt64(id & 63)
            }
        }
        self.cumulative = cumulative
        self.longTokens = long.sorted { $0.units > $1.units }
        self.rest = TokenTrie(subsetOf: trie, keeping: others)
    }

    /// One byte of the set completes a unit.
    static func byteSetAutomaton(_ grammar: CompiledGrammar, _ unit: UnitRule) -> [Int32]? {
        let set = Int(unit.setIndex) * 4
        return (0...255).map { b in grammar.sets[set + (b >> 6)] >> UInt64(b & 63) & 1 != 0 ? Self.done : Self.dead }
    }

    /// The unit rule's states, breadth-first, each transition computed once by a matcher whose
    /// root is the unit; nil unless the language is finite (at most 64 states), not empty, and
    /// prefix-free (a complete unit can never continue).
    static func ruleAutomaton(_ grammar: CompiledGrammar, _ unit: UnitRule) -> [Int32]? {
        var g = grammar
        g.root = unit.rule
        let m = GrammarMatcher(grammar: g, flushes: false)
        // Breadth-first over the unit's states: every transition is computed once here.
        var index: [Int32: Int32] = [0: 0]
        var order: [Int32] = [0]
        var next: [Int32] = []
        var k = 0
        while k < order.count {
            let s = order[k]
            k += 1
            guard !m.stateAccepting[Int(s)] else { return nil }
            for b in 0...255 {
                let t = m.step(s, UInt8(b))
                if t < 0 {
                    next.append(Self.dead)
                } else if m.stateAccepting[Int(t)] {
                    // A complete unit must be the end of every match (prefix-free).
                    guard m.stateStart[Int(t)] == m.stateStart[Int(t) + 1] else { return nil }
                    next.append(Self.done)
                } else {
                    guard t != 0 else { return nil }
                    if index[t] == nil {
                        guard order.count < 64 else { return nil }
                        index[t] = Int32(order.count)
                        order.append(t)
                    }
                    next.append(index[t]!)
                }
            }
        }
        return next
    }

    /// Sets `allowed` (overwriting it) to the tokens of at most `budget` whole units.
    func fillWhole(_ allowed: UnsafeMutableBufferPointer<UInt64>, budget: Int32) {
        if budget >= maxUnits {
            for w in 0..<words { allowed[w] = pure[w] }
        } else if budget <= Int32(Self.cumulativeLimit) {
            let base = Int(budget) * words
            for w in 0..<words { allowed[w] = cumulative[base + w] }
        } else {
            for w in 0..<words { allowed[w] = pure[w] }
            for (id, units) in longTokens {
                if units <= budget { break }
                allowed[Int(id) >> 6] &= ~(1 << UInt64(id & 63))
            }
        }
    }
}

/// A vocabulary's unit tables, by unit signature (nil: that unit cannot be counted). Shared by
/// the copies of a `TokenTrie`.
final class UnitTableCache: Sendable {
    let tables = Locked<[[Int64]: UnitTable?]>([:])
    static let maxTables = 64

    func table(grammar: CompiledGrammar, unit: UnitRule, trie: TokenTrie) -> UnitTable? {
        tables.withLock { tables in
            if let known = tables[unit.signature] { return known }
            let made = UnitTable(grammar: grammar, unit: unit, trie: trie)
            if tables.count >= Self.maxTables { tables.removeAll() }
            tables[unit.signature] = made
            return made
        }
    }
}
