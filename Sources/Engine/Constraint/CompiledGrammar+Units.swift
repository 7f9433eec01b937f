/// A rule that a grammar repeats as a counted unit (`x*`, `x{0,20}`): one JSON string
/// character, one character of a class. Inside such a repetition the matcher's state changes
/// with every unit (a bounded string has a state per remaining length), so a mask walk over the
/// whole token trie would meet new states at every depth. Knowing the unit, the matcher instead
/// looks up which tokens are made of whole units (precomputed per vocabulary, `UnitTable`) and
/// counts them against the units left, and walks only the few other tokens.
struct UnitRule: Sendable {
    /// The unit's rule id, or for a unit that is one byte set (`[a-z]*`), `-2 - set index`.
    let rule: Int32
    var isByteSet: Bool { rule < -1 }
    var setIndex: Int32 { -2 - rule }
    /// The terminal positions a match of the rule starts at (its closure, sorted), all reached
    /// through references in tail position, so under the caller's own continuation (empty for
    /// a byte set).
    let firstTops: [Int32]
    /// The bytes a unit can start with (256 bits).
    let firstBytes: [UInt64]
    /// The rule's structure with its own rule ids renumbered: equal signatures are equal units,
    /// whichever grammar they come from (the per-vocabulary tables are shared by it).
    let signature: [Int64]
}

extension CompiledGrammar {
    /// The largest sub-grammar taken as a unit (more is not a lexical unit).
    static let maxUnitRules = 32
    static let maxUnitPositions = 2048

    /// Finds the counted repetitions: rules of the shapes the compiler makes for repetitions,
    /// `R ::= U R | ε` (unbounded), `O1 ::= U | ε` and `Ok ::= U O(k-1) | ε`, and the units `U`
    /// they repeat that can be counted: a byte set, or a rule that is not empty and is entered
    /// only through tail references.
    mutating func findUnits() {
        let n = ruleCount
        findFirstBytes()
        repeatUnit = [Int32](repeating: -1, count: n)
        repeatCount = [Int32](repeating: -1, count: n)
        var changed = true
        while changed {
            changed = false
            for r in 0..<n where repeatUnit[r] == -1 {
                guard let (unit, count) = repetitionShape(Int32(r)) else { continue }
                repeatUnit[r] = unit
                repeatCount[r] = count
                changed = true
            }
        }
        var seen: Set<Int32> = []
        units = []
        for u in repeatUnit where u != -1 && !seen.contains(u) {
            seen.insert(u)
            if u < -1 {
                let set = Int(-2 - u) * 4
                let words = Array(sets[set..<set + 4])
                units.append(
                    UnitRule(
                        rule: u, firstTops: [], firstBytes: words, signature: [-9] + words.map(Int64.init(bitPattern:)))
                )
                continue
            }
            var tops: [Int32] = []
            var depth = 0
            guard collectFirstTops(u, into: &tops, depth: &depth), !tops.isEmpty,
                let signature = unitSignature(u)
            else { continue }
            tops = Array(Set(tops)).sorted()
            var bytes = [UInt64](repeating: 0, count: 4)
            for t in tops {
                let set = Int(arguments[Int(t)]) * 4
                for w in 0..<4 { bytes[w] |= sets[set + w] }
            }
            units.append(UnitRule(rule: u, firstTops: tops, firstBytes: bytes, signature: signature))
        }
    }

    /// Each rule's nullability and first bytes, to a fixed point.
    mutating func findFirstBytes() {
        let n = ruleCount
        ruleNullable = [Bool](repeating: false, count: n)
        ruleFirst = [UInt64](repeating: 0, count: n * 4)
        var changed = true
        while changed {
            changed = false
            for r in 0..<n {
                var nullable = false
                var first: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
                for a in alternatives[Int(ruleStart[r])..<Int(ruleEnd[r])] {
                    var p = Int(a)
                    while true {
                        let k = kinds[p]
                        if k == .end {
                            nullable = true
                            break
                        }
                        let base = Int(arguments[p]) * 4
                        if k == .terminal {
                            first.0 |= sets[base]
                            first.1 |= sets[base + 1]
                            first.2 |= sets[base + 2]
                            first.3 |= sets[base + 3]
                        } else {
                            first.0 |= ruleFirst[base]
                            first.1 |= ruleFirst[base + 1]
                            first.2 |= ruleFirst[base + 2]
                            first.3 |= ruleFirst[base + 3]
                        }
                        if k == .terminal || !ruleNullable[Int(arguments[p])] { break }
                        p += 1
                    }
                }
                let f = r * 4
                let grown =
                    ruleFirst[f] | first.0 != ruleFirst[f] || ruleFirst[f + 1] | first.1 != ruleFirst[f + 1]
                    || ruleFirst[f + 2] | first.2 != ruleFirst[f + 2] || ruleFirst[f + 3] | first.3 != ruleFirst[f + 3]
                if grown || nullable != ruleNullable[r] {
                    ruleFirst[f] |= first.0
                    ruleFirst[f + 1] |= first.1
                    ruleFirst[f + 2] |= first.2
                    ruleFirst[f + 3] |= first.3
                    ruleNullable[r] = ruleNullable[r] || nullable
                    changed = true
                }
            }
        }
    }

    /// (unit, count) when rule `r` is a counted repetition of a unit rule (count -1: unbounded).
    private func repetitionShape(_ r: Int32) -> (Int32, Int32)? {
        let first = Int(ruleStart[Int(r)])
        guard Int(ruleEnd[Int(r)]) - first == 2 else { return nil }
        let a = Int(alternatives[first])
        let b = Int(alternatives[first + 1])
        let body: Int
        if kinds[a] == .end {
            body = b
        } else if kinds[b] == .end {
            body = a
        } else {
            return nil
        }
        let unit: Int32
        switch kinds[body] {
        case .reference: unit = arguments[body]
        case .terminal: unit = -2 - arguments[body]
        case .end: return nil
        }
        guard unit != r else { return nil }
        switch kinds[body + 1] {
        case .end:
            return (unit, 1)
        case .reference:
            guard kinds[body + 2] == .end else { return nil }
            let next = arguments[body + 1]
            if next == r { return (unit, -1) }
            guard repeatUnit[Int(next)] == unit else { return nil }
            let c = repeatCount[Int(next)]
            return (unit, c < 0 ? -1 : c + 1)
        case .terminal:
            return nil
        }
    }

    /// The terminal positions rule `r` starts at, following only references in tail position
    /// (`[ref X]` alternatives); false when the rule can be empty or starts otherwise.
    private func collectFirstTops(_ r: Int32, into tops: inout [Int32], depth: inout Int) -> Bool {
        depth += 1
        guard depth < 64 else { return false }
        for a in alternatives[Int(ruleStart[Int(r)])..<Int(ruleEnd[Int(r)])] {
            switch kinds[Int(a)] {
            case .terminal:
                tops.append(a)
            case .end:
                return false
            case .reference:
                guard kinds[Int(a) + 1] == .end, collectFirstTops(arguments[Int(a)], into: &tops, depth: &depth) else {
                    return false
                }
            }
        }
        return true
    }

    /// The sub-grammar reachable from `u`, rules renumbered in the order met; nil when too large.
    private func unitSignature(_ u: Int32) -> [Int64]? {
        var local: [Int32: Int64] = [u: 0]
        var order: [Int32] = [u]
        var out: [Int64] = []
        var next = 0
        while next < order.count {
            let r = order[next]
            next += 1
            out.append(-1)
            for a in alternatives[Int(ruleStart[Int(r)])..<Int(ruleEnd[Int(r)])] {
                out.append(-2)
                var p = Int(a)
                while kinds[p] != .end {
                    if kinds[p] == .terminal {
                        let set = Int(arguments[p]) * 4
                        out.append(0)
                        for w in 0..<4 { out.append(Int64(bitPattern: sets[set + w])) }
                    } else {
                        let target = arguments[p]
                        if local[target] == nil {
                            local[target] = Int64(order.count)
                            order.append(target)
                        }
                        out.append(1)
                        out.append(local[target]!)
                    }
                    p += 1
                    guard out.count < Self.maxUnitPositions * 6 else { return nil }
                }
            }
            guard order.count <= Self.maxUnitRules else { return nil }
        }
        return out
    }
}
