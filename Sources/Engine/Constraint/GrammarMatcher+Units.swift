extension GrammarMatcher {
    /// The unit a state is counting and how many more units it allows (`Int32.max`: no bound),
    /// when the state has this shape: every stack either is about to start one unit `U` under a
    /// continuation that, read forward, allows only more units of `U` then a byte that cannot
    /// start one (or the end), or waits for a byte that cannot start a unit. Then a token made of
    /// `c` whole units is allowed exactly when `c` is at most the largest budget: such tokens
    /// never leave the units, every unit leads to the same next state, and past the budget the
    /// only byte left cannot start a unit. Computed once per state.
    func countedUnit(_ s: Int32) -> (unit: Int, budget: Int32)? {
        var u = stateUnit[Int(s)]
        if u == -2 {
            if let (unit, budget) = findCountedUnit(s) {
                u = Int32(unit)
                stateBudget[Int(s)] = budget
            } else {
                u = -1
            }
            stateUnit[Int(s)] = u
        }
        return u < 0 ? nil : (Int(u), stateBudget[Int(s)])
    }

    private func findCountedUnit(_ s: Int32) -> (Int, Int32)? {
        let start = Int(stateStart[Int(s)])
        let end = Int(stateStart[Int(s) + 1])
        guard end > start else { return nil }
        candidates: for (index, unit) in grammar.units.enumerated() {
            var budget: Int32 = 0
            var found = false
            if unit.isByteSet {
                // Each stack whose top is the set itself is about to take one unit.
                for k in start..<end {
                    let top = stateTops[k]
                    let position = nodePosition[Int(top)]
                    if grammar.arguments[Int(position)] == unit.setIndex {
                        guard let more = unitsLeft(at: position + 1, then: nodeParent[Int(top)], unit) else {
                            continue candidates
                        }
                        budget = max(budget, more == Int32.max ? more : more + 1)
                        found = true
                    } else if !disjoint(position, unit.firstBytes) {
                        continue candidates
                    }
                }
                if found { return (index, budget) }
                continue
            }
            var groups: [Int32: Int] = [:]
            for k in start..<end {
                let top = stateTops[k]
                let position = nodePosition[Int(top)]
                if unit.firstTops.contains(position) {
                    groups[nodeParent[Int(top)], default: 0] += 1
                } else if !disjoint(position, unit.firstBytes) {
                    continue candidates
                }
            }
            guard !groups.isEmpty else { continue }
            for (parent, count) in groups {
                // Nodes are unique, so a full count is the unit's whole first set.
                guard count == unit.firstTops.count else { continue candidates }
                let more: Int32?
                if parent < 0 {
                    more = 0
                } else {
                    more = unitsLeft(at: nodePosition[Int(parent)], then: nodeParent[Int(parent)], unit)
                }
                guard let more else { continue candidates }
                budget = max(budget, more == Int32.max ? more : more + 1)
            }
            return (index, budget)
        }
        return nil
    }

    /// Whether terminal `position`'s bytes are none of `bytes`.
    private func disjoint(_ position: Int32, _ bytes: [UInt64]) -> Bool {
        let set = Int(grammar.arguments[Int(position)]) * 4
        for w in 0..<4 where grammar.sets[set + w] & bytes[w] != 0 { return false }
        return true
    }

    /// How many units of `unit` may follow once the current one is done, reading the
    /// continuation forward from `position` (then from the node `then`, popping at each rule's
    /// end): the unit's own references or byte set count one, counted repetitions of it their
    /// count, other rules that cannot start with a unit's byte are passed when they can be
    /// empty; then a terminal or rule that cannot start a unit, or the end of the input. Nil
    /// when a byte that starts a unit could follow the units (then the count alone cannot decide).
    private func unitsLeft(at position: Int32, then node: Int32, _ unit: UnitRule) -> Int32? {
        var total: Int64 = 0
        var q = Int(position)
        var n = node
        while true {
            switch grammar.kinds[q] {
            case .terminal:
                if unit.isByteSet && grammar.arguments[q] == unit.setIndex {
                    total += 1
                    q += 1
                    continue
                }
                return disjoint(Int32(q), unit.firstBytes) ? Int32(min(total, Int64(Int32.max))) : nil
            case .reference:
                let r = grammar.arguments[q]
                if r == unit.rule {
                    total += 1
                } else if grammar.repeatUnit[Int(r)] == unit.rule {
                    let c = grammar.repeatCount[Int(r)]
                    total = c < 0 ? Int64(Int32.max) : total + Int64(c)
                } else {
                    // Another rule: it must not start with a unit's byte; if it can be empty,
                    // what comes after it may come next as well.
                    let f = Int(r) * 4
                    for w in 0..<4 where grammar.ruleFirst[f + w] & unit.firstBytes[w] != 0 { return nil }
                    if !grammar.ruleNullable[Int(r)] { return Int32(min(total, Int64(Int32.max))) }
                }
                q += 1
            case .end:
                guard n >= 0 else { return Int32(min(total, Int64(Int32.max))) }
                q = Int(nodePosition[Int(n)])
                n = nodeParent[Int(n)]
            }
        }
    }

    /// Whether the current state's mask is computed by counting units (tests).
    func usesCountedMask(trie: TokenTrie) -> Bool {
        guard let (unit, _) = countedUnit(current) else { return false }
        return unitTable(unit, trie: trie) != nil
    }

    /// The table of the grammar's unit `index` for `trie`, looked up once per matcher.
    func unitTable(_ index: Int, trie: TokenTrie) -> UnitTable? {
        let id = ObjectIdentifier(trie.unitTables)
        if unitTrie != id || unitLooked.count != grammar.units.count {
            unitTrie = id
            unitLooked = [Bool](repeating: false, count: grammar.units.count)
            unitTables = [UnitTable?](repeating: nil, count: grammar.units.count)
        }
        if !unitLooked[index] {
            unitLooked[index] = true
            unitTables[index] = trie.unitTables.table(grammar: grammar, unit: grammar.units[index], trie: trie)
        }
        return unitTables[index]
    }

    /// The mask of a counting state: the tokens of at most `budget` whole units from the table,
    /// then the table's other tokens walked from the current state. Along a path the walk stays
    /// in the unit automaton (no matcher state) while the bytes form whole units within the
    /// budget, and takes the matcher's state after that many units (the same whichever units)
    /// at the first byte that cannot start a unit.
    func fillCountedMask(table counted: UnitTable, budget: Int32, allowed: UnsafeMutableBufferPointer<UInt64>) {
        counted.fillWhole(allowed, budget: budget)
        let representative = counted.representative
        let depth = counted.rest.maxDepth + 1
        if levelState.count < depth { levelState = [Int32](repeating: 0, count: depth) }
        if levelUnitState.count < depth {
            levelUnitState = [Int32](repeating: 0, count: depth)
            levelUnits = [Int32](repeating: 0, count: depth)
        }
        advanced.removeAll(keepingCapacity: true)
        advanced.append(current)
        // Plain loads in the loop, as in `fillWalkedMask`: the trie and the unit automaton through
        // buffer pointers, the per-depth levels too (`step` and `afterUnits` touch neither).
        levelState.withUnsafeMutableBufferPointer { levelState in
            levelUnitState.withUnsafeMutableBufferPointer { levelUnitState in
                levelUnits.withUnsafeMutableBufferPointer { levelUnits in
                    counted.next.withUnsafeBufferPointer { next in
                        counted.rest.withNodes { trie in
                            // The transition table, reloaded after each miss (a new state may move it).
                            var table = transitions
                            levelState[0] = -1
                            levelUnitState[0] = 0
                            levelUnits[0] = 0
                            var i = 0
                            while i < trie.count {
                                let d = Int(trie.depths[i])
                                let byte = trie.bytes[i]
                                let from = levelState[d &- 1]
                                var alive = false
                                if from >= 0 {
                                    var s = table[Int(from) &* 256 &+ Int(byte)]
                                    if s == -2 {
                                        s = computeStep(from, byte)
                                        table = transitions
                                    }
                                    if s >= 0 {
                                        levelState[d] = s
                                        alive = true
                                    }
                                } else {
                                    let q = levelUnitState[d &- 1]
                                    let c = levelUnits[d &- 1]
                                    let t = next[Int(q) &* 256 &+ Int(byte)]
                                    if t == UnitTable.dead {
                                        // Between units, a byte that is no unit's start: the matcher takes over.
                                        let base = q == 0 ? afterUnits(c, representative) : -1
                                        if base >= 0 {
                                            table = transitions
                                            var s = table[Int(base) &* 256 &+ Int(byte)]
                                            if s == -2 {
                                                s = computeStep(base, byte)
                                                table = transitions
                                            }
                                            if s >= 0 {
                                                levelState[d] = s
                                                alive = true
                                            }
                                        }
                                    } else if q != 0 || c < budget {
                                        levelState[d] = -1
                                        if t == UnitTable.done {
                                            levelUnitState[d] = 0
                                            levelUnits[d] = c &+ 1
                                        } else {
                                            levelUnitState[d] = t
                                            levelUnits[d] = c
                                        }
                                        alive = true
                                    }
                                }
                                if alive {
                                    var t = Int(trie.tokenStart[i])
                                    let end = Int(trie.tokenEnd[i])
                                    while t < end {
                                        let id = Int(trie.tokenIDs[t])
                                        allowed[id &>> 6] |= 1 &<< UInt64(id & 63)
                                        t &+= 1
                                    }
                                    i &+= 1
                                } else {
                                    i = Int(trie.subtreeEnd[i])
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The state after `c` whole units from the masked state (`representative` fed `c` times).
    private func afterUnits(_ c: Int32, _ representative: [UInt8]) -> Int32 {
        while advanced.count <= Int(c) {
            var s = advanced[advanced.count - 1]
            for b in representative where s >= 0 { s = step(s, b) }
            advanced.append(s)
        }
        return advanced[Int(c)]
    }
}
