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
        GrammarConstraint(grammar: try CompiledGrammar(grammar), trie: tokenTrie, identity: identity)
    }
}
