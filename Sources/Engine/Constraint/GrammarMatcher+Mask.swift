extension GrammarMatcher {
    /// Sets `allowed` (one bit per token id, `(vocabularySize + 63) / 64` words) to the tokens
    /// that may come next: those whose bytes continue a match, found by walking the trie with
    /// the state automaton and skipping a subtree at its first rejected byte; and the
    /// end-of-generation tokens when the output so far is a complete match. A state's mask is
    /// computed once while it stays in the cache.
    public func fillMask(trie: TokenTrie, allowed: UnsafeMutableBufferPointer<UInt64>) {
        let words = (trie.vocabularySize + 63) / 64
        if maskWords != words {
            maskBits.deallocate()
            maskBits = .allocate(capacity: words * Self.maskSlots)
            maskWords = words
            for s in maskSlot.indices { maskSlot[s] = -1 }
            for i in slotState.indices { slotState[i] = -1 }
        }
        let cached = maskSlot[Int(current)]
        if cached >= 0 {
            let base = Int(cached) * words
            for w in 0..<words { allowed[w] = maskBits[base + w] }
            return
        }
        if let (unit, budget) = countedUnit(current), let table = unitTable(unit, trie: trie) {
            fillCountedMask(table: table, budget: budget, allowed: allowed)
        } else {
            fillWalkedMask(trie: trie, allowed: allowed)
        }
        if canEnd {
            for id in trie.endOfGeneration where Int(id) < trie.vocabularySize {
                allowed[Int(id) >> 6] |= 1 << UInt64(id & 63)
            }
        }
        // Keep it: the slot's previous state loses its mask.
        let slot = nextSlot
        nextSlot = (nextSlot + 1) % Self.maskSlots
        if slotState[slot] >= 0 && Int(slotState[slot]) < maskSlot.count { maskSlot[Int(slotState[slot])] = -1 }
        slotState[slot] = current
        maskSlot[Int(current)] = Int32(slot)
        let base = slot * words
        for w in 0..<words { maskBits[base + w] = allowed[w] }
    }

    /// The mask by a walk of the whole trie with the state automaton, skipping a subtree at its
    /// first rejected byte.
    func fillWalkedMask(trie: TokenTrie, allowed: UnsafeMutableBufferPointer<UInt64>) {
        let words = (trie.vocabularySize + 63) / 64
        for i in 0..<words { allowed[i] = 0 }
        if levelState.count <= trie.maxDepth { levelState = [Int32](repeating: 0, count: trie.maxDepth + 1) }
        // Plain loads in the loop: the trie's arrays and the walk's levels through pointers, the
        // transition table reloaded after each miss (a new state may move it).
        levelState.withUnsafeMutableBufferPointer { levels in
            trie.withNodes { trie in
                levels[0] = current
                var table = transitions
                var i = 0
                while i < trie.count {
                    let depth = Int(trie.depths[i])
                    let from = levels[depth &- 1]
                    let byte = trie.bytes[i]
                    var s = table[Int(from) &* 256 &+ Int(byte)]
                    if s == -2 {
                        s = computeStep(from, byte)
                        table = transitions
                    }
                    if s >= 0 {
                        levels[depth] = s
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

    /// The plain reference for `fillMask`: every token's bytes fed, one byte at a time, to the
    /// current set of stacks, without the trie, the transition table or the mask cache. For tests.
    public func bruteForceMask(tokens: [[UInt8]?], endOfGeneration: Set<Int32>) -> Set<Int32> {
        let start = Array(stateTops[Int(stateStart[Int(current)])..<Int(stateStart[Int(current) + 1])])
        var out: Set<Int32> = []
        for (id, b) in tokens.enumerated() {
            guard let b, !b.isEmpty, !endOfGeneration.contains(Int32(id)) else { continue }
            var tops = start
            var alive = true
            for byte in b {
                epoch &+= 1
                scratch.removeAll(keepingCapacity: true)
                var accepting = false
                for top in tops where grammar.terminal(nodePosition[Int(top)], matches: byte) {
                    close(nodePosition[Int(top)] + 1, parent: nodeParent[Int(top)], accepting: &accepting)
                }
                if scratch.isEmpty && !accepting {
                    alive = false
                    break
                }
                tops = scratch
            }
            if alive { out.insert(Int32(id)) }
        }
        if canEnd { out.formUnion(endOfGeneration) }
        return out
    }
}
