/// Drafting without a model (prompt lookup): when the last few tokens appeared earlier in the
/// prompt or the answer, what followed them then is proposed now. Answers that quote their
/// prompt, edit code, or repeat a JSON object's keys are full of such runs.
///
/// The longest suffix of `maxMatch` down to `minMatch` tokens is looked for, most recent
/// occurrence first; what followed it, up to the limit, is the draft.
public struct PromptLookupDrafter: Drafter, Sendable {
    public let minMatch: Int
    public let maxMatch: Int
    /// How far back (in tokens) occurrences are looked for: the search stays a few microseconds
    /// however long the context.
    public let window: Int

    public init(minMatch: Int = 2, maxMatch: Int = 4, window: Int = 4096) {
        self.minMatch = max(1, minMatch)
        self.maxMatch = max(self.minMatch, maxMatch)
        self.window = max(1, window)
    }

    public func draft(after history: ArraySlice<Int32>, limit: Int) -> [Int32] {
        guard limit > 0 else { return [] }
        let end = history.endIndex
        let start = max(history.startIndex, end - window)
        for n in stride(from: maxMatch, through: minMatch, by: -1) where end - n > start {
            let suffix = history[(end - n)..<end]
            // Occurrences ending before the suffix itself, most recent first.
            var i = end - n - 1
            while i >= start {
                if history[i] == suffix.first!, i + n < end, history[i..<(i + n)].elementsEqual(suffix) {
                    let from = i + n
                    return Array(history[from..<min(end, from + limit)])
                }
                i -= 1
            }
        }
        return []
    }
}
