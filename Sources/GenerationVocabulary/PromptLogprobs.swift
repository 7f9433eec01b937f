/// A scored prompt (completions' `echo`): its first token, which nothing comes before and so
/// has no log-probability, then each later token's log-probability given those before it.
public struct PromptLogprobs: Sendable, Equatable {
    public var firstID: Int32
    public var firstBytes: [UInt8]
    /// Entry i is prompt token i + 1's.
    public var scored: [TokenLogprob]

    public init(firstID: Int32, firstBytes: [UInt8], scored: [TokenLogprob]) {
        self.firstID = firstID
        self.firstBytes = firstBytes
        self.scored = scored
    }

    /// Every prompt token's count: the first and the scored ones.
    public var count: Int { scored.count + 1 }
}
