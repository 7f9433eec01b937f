import Synchronization

/// A generation's log-probabilities, asked for by the request that holds this and written by
/// the engine, one entry per generated token (the end-of-generation token excluded) before the
/// snapshot showing that token is published. Snapshots stay whole answers: a reader takes the
/// entries up to a snapshot's `completionTokens`, so a snapshot dropped for a slow reader loses
/// none. Append-only, read from any thread.
public final class LogprobRecorder: Sendable {
    /// Which distribution the log-probabilities are of.
    public enum Distribution: String, Sendable, CaseIterable {
        /// The one the token was drawn from: after the constraint's mask, the penalties and, when
        /// sampling, temperature and the top-k/top-p/min-p cut (renormalized over what survived).
        /// Greedy decoding draws from the penalized, masked distribution at temperature 1.
        case processed
        /// The model's own, before anything shapes it (vLLM's `raw_logprobs`).
        case raw
    }

    /// Alternatives per token, 0 to `maxTop`.
    public let top: Int
    public let distribution: Distribution
    private let entries = Mutex<[TokenLogprob]>([])

    /// OpenAI's largest `top_logprobs`.
    public static let maxTop = 20

    /// Whether the prompt is scored too (completions' `echo`): its tokens' log-probabilities,
    /// of the model's own distribution whatever `distribution` says (nothing shapes a prompt).
    public let scoresPrompt: Bool
    private let promptEntries = Mutex<PromptLogprobs?>(nil)

    public init(top: Int, distribution: Distribution = .processed, scoresPrompt: Bool = false) {
        self.top = min(max(top, 0), Self.maxTop)
        self.distribution = distribution
        self.scoresPrompt = scoresPrompt
    }

    /// The scored prompt, written once when its pass ends (before the first generated token's
    /// entry); nil until then, and always without `scoresPrompt`.
    public var prompt: PromptLogprobs? { promptEntries.withLock { $0 } }

    public func setPrompt(_ prompt: PromptLogprobs) { promptEntries.withLock { $0 = prompt } }

    public func append(_ entry: TokenLogprob) { entries.withLock { $0.append(entry) } }

    public var count: Int { entries.withLock { $0.count } }

    /// The entries in `range`, clamped to those written.
    public func entries(_ range: Range<Int>) -> [TokenLogprob] {
        entries.withLock { e in
            let r = range.clamped(to: 0..<e.count)
            return Array(e[r])
        }
    }

    public var all: [TokenLogprob] { entries.withLock { $0 } }
}
