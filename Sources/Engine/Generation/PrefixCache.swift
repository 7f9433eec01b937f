import Telemetry

/// The KV caches of finished stateless generations, kept so that a new prompt that starts the
/// same way (the chat template's system message, a shared instruction, a conversation resent
/// with one more turn) computes only what follows the longest prefix it shares with one.
///
/// Reuse is exact or not at all: only the rows the predictor says a fresh run would compute
/// the same (`reusable`) are copied, and the rest of the prompt is then fed as pieces of the
/// whole (`TokenPredictor.predict(prompt:of:sequence:logits:)`), so a request's answer stays
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
    /// How many of `shared` leading tokens of a kept sequence, whose rows were computed as a
    /// prompt of `keptPromptLength` tokens, a prompt of `promptLength` tokens can copy and still
    /// get the rows a fresh run computes, bit for bit (the predictor's rule,
    /// `TokenPredictor.reusablePrefix`): a row's arithmetic can depend on the length of the
    /// prompt it was computed in (llama.cpp's micro-batch decides K-quant product orders and
    /// flash attention tiles), and a kept row computed in another arithmetic would change every
    /// later result (seen on the default model before prompts were fed as pieces of the whole:
    /// a lone last token's 49,152 logits all differed, and "Peaches" came for "Lemons").
    let reusable: (_ shared: Int, _ keptPromptLength: Int, _ promptLength: Int) -> Int
    /// A kept sequence, whose it is, its tokens (those its rows hold, then those still to be
    /// computed: the last answer token, never fed), and how many of its leading rows were
    /// computed as rows of a prompt of `promptLength` tokens. The rows after those, the answer's,
    /// were computed one per step as decode rows, which a fresh prompt computes otherwise: they
    /// are reused only once recomputed as prompt rows (`completeStep`).
    struct Entry {
        let sequence: any PredictorSequence
        let scope: GenerationScope
        let tokens: [Int32]
        var promptLength: Int
        var exactRows: Int
    }

    /// Least recently used first (written by `completeStep` too).
    var entries: [Entry] = []
    private var heldTokens = 0
    private let held: Gauge
    private let hits: Counter
    private let reusedTokens: Counter
    let completedTokens: Counter

    init(
        budgetTokens: Int, minimumTokens: Int = 4,
        reusable: @escaping (_ shared: Int, _ keptPromptLength: Int, _ promptLength: Int) -> Int = { s, _, _ in s },
        metrics: Metrics = Metrics()
    ) {
        self.budgetTokens = budgetTokens
        self.minimumTokens = minimumTokens
        self.reusable = reusable
        held = metrics.gauge(
            "inferd_prefix_cache_tokens",
            help: "Tokens of finished requests' KV caches kept for prompts sharing their prefixes.")
        hits = metrics.counter(
            "inferd_prefix_cache_hits_total", help: "Requests that started from a kept prefix instead of position 0.")
        reusedTokens = metrics.counter(
            "inferd_prefix_cache_reused_tokens_total",
            help: "Prompt tokens copied from kept prefixes instead of computed.")
        completedTokens = metrics.counter(
            "inferd_prefix_cache_completed_tokens_total",
            help: "Answer tokens of kept caches recomputed as prompt rows while idle, for resent conversations.")
    }

    /// A request started from `count` tokens of a kept prefix.
    func reused(_ count: Int) {
        hits.increment()
        reusedTokens.increment(by: Double(count))
    }

    var tokenCount: Int { heldTokens }

    /// Keeps a finished generation's sequence (its tokens' keys and values stay valid) for later
    /// requests of `scope`; its first `promptLength` rows were computed as that prompt (see
    /// `Entry`; by default all of them). `history` is the job's tokens, prompt and answer: those
    /// past the sequence's (at most its capacity) are computed by `completeStep` too.
    func keep(
        _ sequence: any PredictorSequence, scope: GenerationScope, promptLength: Int = .max, history: [Int32]? = nil
    ) {
        guard sequence.count >= minimumTokens, sequence.count <= budgetTokens else { return }
        var tokens = sequence.tokens
        if let history, history.count > tokens.count, history.starts(with: tokens) {
            tokens = Array(history.prefix(sequence.capacity))
        }
        let exact = min(promptLength, sequence.count)
        entries.append(
            Entry(sequence: sequence, scope: scope, tokens: tokens, promptLength: exact, exactRows: exact))
        heldTokens += tokens.count
        while heldTokens > budgetTokens, !entries.isEmpty {
            heldTokens -= entries.removeFirst().tokens.count
        }
        held.set(Double(heldTokens))
    }

    /// Forgets entry `index`.
    func drop(at index: Int) {
        heldTokens -= entries.remove(at: index).tokens.count
        held.set(Double(heldTokens))
    }

    /// The entry of `scope` sharing the longest reusable prefix with `prompt`, and that
    /// prefix's length (at most `limit` and the entry's prompt, then what `reusable` allows), or
    /// nil below `minimumTokens`. The entry becomes the most recently used.
    func longestPrefix(of prompt: [Int32], limit: Int, scope: GenerationScope) -> (
        sequence: any PredictorSequence, count: Int
    )? {
        var best: (index: Int, count: Int)?
        for (index, entry) in entries.enumerated() where entry.scope == scope {
            let matching = min(zip(entry.tokens, prompt).prefix { $0 == $1 }.count, limit, entry.exactRows)
            let shared = matching < minimumTokens ? 0 : reusable(matching, entry.promptLength, prompt.count)
            if shared >= minimumTokens, shared >= (best?.count ?? 0) { best = (index, shared) }
        }
        guard let best else { return nil }
        let entry = entries.remove(at: best.index)
        entries.append(entry)
        return (entry.sequence, best.count)
    }
}
