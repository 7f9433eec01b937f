/// Completing kept caches while the engine is idle: a stateless chat client resends the
/// conversation with the last answer in it, but a kept cache's answer rows were computed one per
/// step, as decode rows, which a fresh prompt computes otherwise (other kernels, another
/// micro-batch), so they could not be reused and every turn recomputed the previous answer. With
/// nothing else to run, the worker recomputes them as rows of a prompt
/// `completionLookahead` tokens longer than the entry (the next turn's prompt adds at least its
/// end-of-turn markers and a message), the arithmetic a longer prompt gives them. A next prompt
/// then reuses them exactly where the predictor's rule says its arithmetic is the same.
extension PrefixCache {
    /// How much longer than a kept conversation its next prompt is taken to be.
    static let completionLookahead = 64
    /// Tokens computed per idle step: a request arriving meanwhile waits for at most this many.
    static let completionPiece = 8

    var hasIncompleteEntries: Bool { entries.contains { $0.exactRows < $0.tokens.count } }

    /// Computes the next piece of the most recently used entry that has rows to complete; false
    /// when none is left. Worker thread, between requests' steps.
    func completeStep(predictor: any TokenPredictor, logits: UnsafeMutableBufferPointer<Float>) -> Bool {
        guard let index = entries.lastIndex(where: { $0.exactRows < $0.tokens.count }) else { return false }
        var entry = entries[index]
        let length = entry.tokens.count + Self.completionLookahead
        // The rows already in the arithmetic of a prompt of `length` tokens stay; the rest go.
        let keep =
            entry.promptLength == length ? entry.exactRows : reusable(entry.exactRows, entry.promptLength, length)
        if entry.sequence.count > keep { entry.sequence.truncate(to: keep) }
        let end = min(keep + Self.completionPiece, entry.tokens.count)
        do {
            try predictor.predict(
                prompt: entry.tokens[keep..<end], of: length, sequence: entry.sequence, logits: logits)
        } catch {
            // Cannot happen for a sequence the predictor made with this capacity; were it to,
            // the entry's rows are no longer all known, so it goes.
            drop(at: index)
            return hasIncompleteEntries
        }
        completedTokens.increment(by: Double(end - keep))
        entry.promptLength = length
        entry.exactRows = end
        entries[index] = entry
        return hasIncompleteEntries
    }
}
