extension LlamaModel {
    /// What decides the arithmetic of the row at `position` of a prompt of `length` tokens, fed
    /// in any pieces (`forward(prompt:of:cache:logits:)`): the size of its llama.cpp micro-batch
    /// and its place in it, as far as this model's kernels look at them. Two prompts give a row
    /// the same bits exactly when their values here agree for it and every row before it (the
    /// prefix cache's rule). Mirrors `Segment.rowOrder`, `attendFlash` and `call_rows`.
    func rowArithmetic(_ position: Int, inPromptOf length: Int) -> UInt16 {
        let first = position / Self.microBatchLimit * Self.microBatchLimit
        let size = min(Self.microBatchLimit, length - first)
        // A micro-batch of one row is a decode step's (no attention tiles, the split kernel).
        var bits: UInt16 = size >= 2 ? 1 : 0
        if hasBatchOrders { bits |= UInt16(Segment.rowOrder(position - first, microBatch: size)) << 1 }
        if config.architecture.flashAttentionRows && size >= Self.flashAttentionTileRows { bits |= 1 << 8 }
        return bits
    }
}
