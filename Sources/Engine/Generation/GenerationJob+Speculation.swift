/// A decode step that checks drafted tokens (`Speculation`): the newest token and the drafts
/// go through one pass of decode rows, then each row's token is sampled as a plain step would
/// sample it and accepted; the drafts stand while they equal what was sampled. The KV cache
/// keeps the rows of the accepted tokens only. A cancel lands between steps, so within this one.
extension GenerationJob {
    /// The drafts for this step, or nil without speculation or room for one.
    func drafts() -> [Int32]? {
        guard let speculation else { return nil }
        // Room in the answer and in the cache for the drafts and the token after them.
        let room = min(
            draftLimit ?? speculation.maxDraft, request.maxTokens - generated.count - 1,
            sequence.capacity - sequence.count - 2, LlamaModel.maxBatch - 1)
        guard room >= 1 else { return nil }
        var drafter = self.drafter ?? speculation.makeDrafter(sequence.capacity)
        defer { self.drafter = drafter }
        return drafter.draft(after: history[...], limit: room)
    }

    func speculate(_ drafts: [Int32], predictor: any TokenPredictor) throws {
        guard let speculation, let newest = history.last else { return }
        let v = vocabularySize
        let before = sequence.count
        verifyInput.removeAll(keepingCapacity: true)
        verifyInput.append(newest)
        verifyInput.append(contentsOf: drafts)
        if verifyRows.count < verifyInput.count * v {
            verifyRows = Array(repeating: 0, count: (speculation.maxDraft + 1) * v)
        }
        var matched = 0
        try verifyRows.withUnsafeMutableBufferPointer { rows in
            // Row j: the logits after verifyInput[j], valid while drafts 0..<j were accepted.
            try predictor.verify(tokens: verifyInput[...], sequence: sequence, rows: rows)
            for j in 0...drafts.count {
                let token = sampleNext(logits: UnsafeMutableBufferPointer(rebasing: rows[(j * v)..<((j + 1) * v)]))
                accept(token)
                if isDone || j == drafts.count || token != drafts[j] { break }
                matched += 1
            }
        }
        // The cache holds the newest token and the accepted drafts; the last sampled token is
        // fed by the next step, as after a plain one.
        sequence.truncate(to: before + 1 + matched)
        // The next draft's length follows this one's luck: every row of a wider pass costs a
        // decode row's work (its output head too), so after a miss the next guess is short, and
        // after a full hit it grows.
        draftLimit =
            matched == drafts.count
            ? min(speculation.maxDraft, drafts.count + 2) : max(1, matched + 1)
        speculation.steps.increment()
        speculation.drafted.increment(by: Double(drafts.count))
        speculation.accepted.increment(by: Double(matched))
    }
}
