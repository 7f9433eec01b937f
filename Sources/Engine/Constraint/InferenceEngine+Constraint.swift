extension InferenceEngine {
    /// The tokens that end an answer with this model (its tokenizer's and its chat template's).
    public var endOfGenerationIDs: Set<Int32> {
        tokenizer.endOfGenerationIDs.union(template?.endOfGenerationIDs ?? [])
    }

    /// The vocabulary as a token trie, built once (the first structured request pays for it).
    public var tokenTrie: TokenTrie {
        constraintTrie.withLock { cached in
            if let cached { return cached }
            let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: endOfGenerationIDs)
            cached = trie
            return trie
        }
    }

    /// A constraint for this model's vocabulary from a grammar. `identity` names what the grammar
    /// allows (its source text), for single-flight.
    public func constraint(_ grammar: Grammar, identity: String) throws(GrammarError) -> GrammarConstraint {
        constraint(compiled: try CompiledGrammar(grammar), identity: identity)
    }

    /// The constraint for a compiled grammar; the same object for the same identity while it
    /// stays in a small cache, so its generations share what the automaton has learnt.
    public func constraint(compiled: CompiledGrammar, identity: String) -> GrammarConstraint {
        let trie = tokenTrie
        return constraintCache.withLock { cache in
            if let c = cache[identity] { return c }
            let c = GrammarConstraint(grammar: compiled, trie: trie, identity: identity)
            if cache.count >= 32 { cache.removeAll() }
            cache[identity] = c
            return c
        }
    }
}
