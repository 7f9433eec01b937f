/// A compiled grammar over a model's vocabulary: the output must match the grammar, byte for
/// byte, and end only where the grammar can end.
public struct GrammarConstraint: GenerationConstraint {
    public let grammar: CompiledGrammar
    public let trie: TokenTrie
    public let identity: String

    /// - Parameter identity: a canonical description of what the grammar allows (its source).
    public init(grammar: CompiledGrammar, trie: TokenTrie, identity: String) {
        self.grammar = grammar
        self.trie = trie
        self.identity = identity
    }

    public func makeProcessor() -> any LogitsProcessor {
        GrammarProcessor(grammar: grammar, trie: trie)
    }
}

/// Masks the tokens that cannot continue the grammar and advances its matcher with the sampled
/// token. Its mask and token-byte buffers are allocated once, when it is made.
public final class GrammarProcessor: LogitsProcessor {
    public let matcher: GrammarMatcher
    let trie: TokenTrie
    let allowed: UnsafeMutableBufferPointer<UInt64>
    /// Set when a token could not be accepted or no token was allowed.
    private var failed = false

    init(grammar: CompiledGrammar, trie: TokenTrie) {
        self.matcher = GrammarMatcher(grammar: grammar)
        self.trie = trie
        self.allowed = .allocate(capacity: (trie.vocabularySize + 63) / 64)
        allowed.initialize(repeating: 0)
    }

    deinit {
        allowed.deallocate()
    }

    public var mustEnd: Bool { failed || matcher.mustEnd }
    public var canEnd: Bool { !failed && matcher.canEnd }

    public func process(logits: UnsafeMutableBufferPointer<Float>) {
        matcher.fillMask(trie: trie, allowed: allowed)
        let n = min(logits.count, trie.vocabularySize)
        var any = false
        var word = 0
        while word * 64 < n {
            let bits = allowed[word]
            if bits != 0 { any = true }
            if bits != ~0 {
                let base = word * 64
                for j in 0..<min(64, n - base) where bits >> UInt64(j) & 1 == 0 {
                    logits[base + j] = -.infinity
                }
            }
            word += 1
        }
        for i in n..<logits.count { logits[i] = -.infinity }
        if !any {
            // No token continues the grammar (a vocabulary that cannot spell what it needs):
            // end here rather than produce output that does not match.
            failed = true
            for id in trie.endOfGeneration where Int(id) < logits.count { logits[Int(id)] = 0 }
        }
    }

    public func accept(token: Int32) -> Bool {
        guard token >= 0, Int(token) < trie.vocabularySize else { return false }
        if trie.endOfGeneration.contains(token) { return matcher.canEnd }
        guard let bytes = trie.tokenBytes(token), matcher.accept(bytes: bytes) else {
            failed = true
            return false
        }
        return true
    }
}
