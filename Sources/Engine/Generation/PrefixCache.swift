import Telemetry

/// The KV caches of finished stateless generations, kept so that a new prompt that starts the
/// same way (the chat template's system message, a shared instruction, a conversation resent
/// with one more turn) computes only what follows the longest prefix it shares with one.
///
/// Reuse is exact or not at all: the predictor copies a prefix only when that changes no later
/// result (`TokenPredictor.makeSequence(capacity:copying:of:)`), so a request's answer stays
/// the same whatever ran before it. Kept caches are the finished jobs' own (no copy when
/// kept); a new request gets a copy of the prefix, so many can start from one entry at once.
/// The least recently used go first once the tokens held pass the budget.
///
/// Each entry belongs to the scope of the request that made it (`GenerationScope`: an API key,
/// and a `cache_salt` within it), and only a request of the same scope reuses it: another
/// tenant's prompt never shortens this one's computation, so neither `cached_tokens` nor timing
/// tells one tenant anything of another's prompts. The budget is shared: one tenant's entries may
/// push out another's (that reveals only that the cache is busy, nothing of its content).
///
/// Owned by the engine's worker thread; nothing else touches it (its metrics are thread-safe).
final class PrefixCache {
    /// Tokens all entries may hold together.
    let budgetTokens: Int
    /// Shortest prefix worth reusing.
    let minimumTokens: Int
    /// Reused prefixes end on a multiple of this (the engine's prompt chunk): the rest of the
    /// prompt is then fed in the very chunks a fresh run feeds it in, so every row is computed
    /// by the same kernels in the same order and the answer is the fresh one bit for bit. A
    /// prefix ending elsewhere leaves a short first chunk (a lone last token, say), whose rows a
    /// fresh run computes inside a longer one, with other kernels: last-bit differences, and at a
    /// near-tie another token (seen on the default model: "Peaches" for "Lemons").
    let alignment: Int
    /// A kept sequence, whose it is, and how many of its leading tokens were computed in whole
    /// prompt chunks (those alone can be reused; a partial last chunk and the generated tokens,
    /// computed one per step, are not in the shape a fresh prompt computes them in).
    struct Entry {
        let sequence: any PredictorSequence
        let scope: GenerationScope
        let exactTokens: Int
    }

    /// Least recently used first.
    private(set) var entries: [Entry] = []
    private var heldTokens = 0
    private let held: Gauge
    private let hits: Counter
    private let reusedTokens: Counter

    init(budgetTokens: Int, minimumTokens: Int = 4, alignment: Int = 1, metrics: Metrics = Metrics()) {
        self.budgetTokens = budgetTokens
        self.minimumTokens = minimumTokens
        self.alignment = max(1, alignment)
        held = metrics.gauge(
            "inferd_prefix_cache_tokens",
            help: "Tokens of finished requests' KV caches kept for prompts sharing their prefixes.")
        hits = metrics.counter(
            "inferd_prefix_cache_hits_total", help: "Requests that started from a kept prefix instead of position 0.")
        reusedTokens = metrics.counter(
            "inferd_prefix_cache_reused_tokens_total",
            help: "Prompt tokens copied from kept prefixes instead of computed.")
    }

    /// A request started from `count` tokens of a kept prefix.
    func reused(_ count: Int) {
        hits.increment()
        reusedTokens.increment(by: Double(count))
    }

    var tokenCount: Int { heldTokens }

    /// Keeps a finished generation's sequence (its tokens' keys and values stay valid) for later
    /// requests of `scope`; `exactTokens` of its leading tokens may be reused (see `Entry`).
    func keep(_ sequence: any PredictorSequence, scope: GenerationScope, exactTokens: Int = .max) {
        guard sequence.count >= minimumTokens, sequence.count <= budgetTokens else { return }
        entries.append(Entry(sequence: sequence, scope: scope, exactTokens: min(exactTokens, sequence.count)))
        heldTokens += sequence.count
        while heldTokens > budgetTokens, !entries.isEmpty {
            heldTokens -= entries.removeFirst().sequence.count
        }
        held.set(Double(heldTokens))
    }

    /// The entry of `scope` sharing the longest prefix with `prompt`, and that prefix's length
    /// (at most `limit` and the entry's `exactTokens`, cut down to a multiple of `alignment`), or
    /// nil below `minimumTokens`. The entry becomes the most recently used.
    func longestPrefix(of prompt: [Int32], limit: Int, scope: GenerationScope) -> (
        sequence: any PredictorSequence, count: Int
    )? {
        var best: (index: Int, count: Int)?
        for (index, entry) in entries.enumerated() where entry.scope == scope {
            let matching = min(zip(entry.sequence.tokens, prompt).prefix { $0 == $1 }.count, limit, entry.exactTokens)
            let shared = matching / alignment * alignment
            if shared >= minimumTokens, shared >= (best?.count ?? 0) { best = (index, shared) }
        }
        guard let best else { return nil }
        let entry = entries.remove(at: best.index)
        entries.append(entry)
        return (entry.sequence, best.count)
    }
}
