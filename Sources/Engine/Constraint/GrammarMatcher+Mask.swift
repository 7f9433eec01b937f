extension GrammarMatcher {
    /// Sets `allowed` (one bit per token id, `(vocabularySize + 63) / 64` words) to the tokens
    /// that may come next: those whose bytes continue a match, found by walking the trie with
    /// the matcher's state and skipping a subtree at its first rejected byte; and the
    /// end-of-generation tokens when the output so far is a complete match.
    /// Allocates nothing once the matcher's buffers have grown.
    public func fillMask(trie: TokenTrie, allowed: UnsafeMutableBufferPointer<UInt64>) {
        for i in allowed.indices { allowed[i] = 0 }
        ensureLevels(trie.maxDepth + 1)
        let mark = nodePosition.count
        let count = trie.bytes.count
        trie.bytes.withUnsafeBufferPointer { bytes in
            trie.depths.withUnsafeBufferPointer { depths in
                var i = 0
                while i < count {
                    let depth = Int(depths[i])
                    if advance(level: depth, byte: bytes[i]) {
                        var t = Int(trie.tokenStart[i])
                        let end = Int(trie.tokenEnd[i])
                        while t < end {
                            let id = Int(trie.tokenIDs[t])
                            allowed[id >> 6] |= 1 << UInt64(id & 63)
                            t += 1
                        }
                        i += 1
                    } else {
                        i = Int(trie.subtreeEnd[i])
                    }
                }
            }
        }
        tops.removeSubrange(levelEnd[0]...)
        truncateArena(to: mark)
        if canEnd {
            for id in trie.endOfGeneration where Int(id) < trie.vocabularySize {
                allowed[Int(id) >> 6] |= 1 << UInt64(id & 63)
            }
        }
    }

    /// The plain reference for `fillMask`: every token's bytes fed to the current state, one
    /// token at a time. For tests.
    public func bruteForceMask(tokens: [[UInt8]?], endOfGeneration: Set<Int32>) -> Set<Int32> {
        var out: Set<Int32> = []
        for (id, b) in tokens.enumerated() {
            guard let b, !b.isEmpty, !endOfGeneration.contains(Int32(id)) else { continue }
            let s = snapshot()
            if accept(bytes: b) { out.insert(Int32(id)) }
            restore(s)
        }
        if canEnd { out.formUnion(endOfGeneration) }
        return out
    }
}
