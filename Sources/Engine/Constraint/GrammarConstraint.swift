import Foundation
import Telemetry

/// A compiled grammar over a model's vocabulary: the output must match the grammar, byte for
/// byte, and end only where the grammar can end.
///
/// Its generations share one automaton (`GrammarMatcher`'s learnt states, transitions and
/// masks), so a schema used again starts warm; each generation keeps only its own state id.
public final class GrammarConstraint: GenerationConstraint {
    public let grammar: CompiledGrammar
    public let trie: TokenTrie
    public let identity: String
    let automaton: Locked<SharedAutomaton>

    /// - Parameter identity: a canonical description of what the grammar allows (its source).
    public init(grammar: CompiledGrammar, trie: TokenTrie, identity: String) {
        self.grammar = grammar
        self.trie = trie
        self.identity = identity
        self.automaton = Locked(SharedAutomaton(GrammarMatcher(grammar: grammar, flushes: false)))
    }

    public func makeProcessor() -> any LogitsProcessor {
        let shared = automaton.withLock { a in
            // Grown past its bounds: new generations start a fresh one (running ones keep theirs).
            if a.matcher.isOverLimit { a = SharedAutomaton(GrammarMatcher(grammar: grammar, flushes: false)) }
            return a
        }
        return GrammarProcessor(automaton: shared, trie: trie, distinctKeys: grammar.distinctObjectKeys)
    }
}

/// A matcher shared by the generations of one constraint, used under its lock.
final class SharedAutomaton: @unchecked Sendable {
    let matcher: GrammarMatcher
    let lock = NSLock()

    init(_ matcher: GrammarMatcher) {
        self.matcher = matcher
    }

    /// Runs `body` with the matcher set to `state`; returns the state it leaves.
    func with<T>(state: inout Int32, _ body: (GrammarMatcher) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        matcher.current = state
        let r = body(matcher)
        state = matcher.current
        return r
    }
}

/// Masks the tokens that cannot continue the grammar and advances its state with the sampled
/// token. Its mask buffer is allocated once, when it is made.
public final class GrammarProcessor: LogitsProcessor {
    let automaton: SharedAutomaton
    let trie: TokenTrie
    let allowed: UnsafeMutableBufferPointer<UInt64>
    /// This generation's state in the shared automaton.
    var state: Int32 = 0
    /// The keys of the open JSON objects, when they must be distinct.
    var keys: JSONKeyTracker?
    /// The tokens `maskDuplicateKeys` cleared this step (capacity reserved once).
    private var cleared: [Int32] = []
    /// Set when a token could not be accepted or no token was allowed.
    private var failed = false

    init(automaton: SharedAutomaton, trie: TokenTrie, distinctKeys: Bool = false) {
        self.automaton = automaton
        self.trie = trie
        if distinctKeys {
            keys = JSONKeyTracker(maxTokenLength: trie.maxDepth)
            cleared.reserveCapacity(trie.quoteTokens.count)
        }
        self.allowed = .allocate(capacity: (trie.vocabularySize + 63) / 64)
        allowed.initialize(repeating: 0)
    }

    deinit {
        allowed.deallocate()
    }

    /// Back to the start of the grammar.
    public func reset() {
        state = 0
        failed = false
        keys?.reset()
    }

    public var mustEnd: Bool { failed || automaton.with(state: &state) { $0.mustEnd } }
    public var canEnd: Bool { !failed && automaton.with(state: &state) { $0.canEnd } }

    public func process(logits: UnsafeMutableBufferPointer<Float>) {
        automaton.with(state: &state) { $0.fillMask(trie: trie, allowed: allowed) }
        if keys?.hasKeys == true { maskDuplicateKeys() }
        let n = min(logits.count, trie.vocabularySize)
        var any = false
        var word = 0
        while word * 64 < n {
            let bits = allowed[word]
            let base = word * 64
            let width = min(64, n - base)
            if bits == 0 {
                for j in 0..<width { logits[base + j] = -.infinity }
            } else {
                any = true
                // Only the cleared bits: usually few once most of a word is allowed.
                var missing = ~bits
                while missing != 0 {
                    let j = missing.trailingZeroBitCount
                    if j >= width { break }
                    logits[base + j] = -.infinity
                    missing &= missing &- 1
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

    /// Clears the allowed tokens that would close a key equal to an earlier key of its object.
    ///
    /// Unless that clears every token the grammar allows: a key written up to the length bound
    /// (`StructuredBounds.maxKeyLength`) equal to an earlier one can only be closed, and with no
    /// token left the answer would end mid-key, not JSON at all. There the duplicate is let
    /// through: the answer stays JSON (parsers keep a repeated key's last value) and ends only
    /// where the grammar can.
    func maskDuplicateKeys() {
        cleared.removeAll(keepingCapacity: true)
        for id in trie.quoteTokens where allowed[Int(id) >> 6] >> UInt64(id & 63) & 1 != 0 {
            guard let bytes = trie.tokenBytes(id), keys!.closesDuplicate(bytes) else { continue }
            allowed[Int(id) >> 6] &= ~(1 << UInt64(id & 63))
            cleared.append(id)
        }
        guard !cleared.isEmpty, !allowed.contains(where: { $0 != 0 }) else { return }
        for id in cleared { allowed[Int(id) >> 6] |= 1 << UInt64(id & 63) }
    }

    public func accept(token: Int32) -> Bool {
        guard token >= 0, Int(token) < trie.vocabularySize else { return false }
        if trie.endOfGeneration.contains(token) { return canEnd }
        guard let bytes = trie.tokenBytes(token), automaton.with(state: &state, { $0.accept(bytes: bytes) }) else {
            failed = true
            return false
        }
        keys?.accept(bytes)
        return true
    }
}
