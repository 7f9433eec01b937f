/// Drafting with a smaller model of the same vocabulary (`draft_model`): its greedy next tokens.
/// It keeps its own KV cache for the job, in step with the job's history: each call drops what
/// the history no longer shares (rejected drafts), feeds what is new (the prompt at the first
/// call, then the accepted tokens), and decodes `limit` tokens.
public struct ModelDrafter: Drafter {
    let model: LlamaModel
    let capacity: Int
    private var cache: KVCache?
    private var logits: [Float]

    public init(model: LlamaModel, capacity: Int) {
        self.model = model
        self.capacity = capacity
        self.logits = Array(repeating: 0, count: model.config.vocabularySize)
    }

    public mutating func draft(after history: ArraySlice<Int32>, limit: Int) -> [Int32] {
        guard limit > 0, !history.isEmpty else { return [] }
        let cache = self.cache ?? model.makeCache(capacity: min(capacity + 1, model.config.contextLength))
        self.cache = cache
        guard history.count + limit <= cache.capacity else { return [] }
        // Keep what the history still shares, but feed at least its last token (its logits).
        let shared = zip(cache.tokens, history).prefix { $0 == $1 }.count
        cache.truncate(to: min(shared, history.count - 1))
        var drafts: [Int32] = []
        do {
            try logits.withUnsafeMutableBufferPointer { buffer in
                try model.forward(tokens: history[(history.startIndex + cache.count)...], cache: cache, logits: buffer)
                for i in 0..<limit {
                    let token = Self.argmax(buffer)
                    drafts.append(token)
                    if i + 1 < limit { try model.forward(tokens: [token], cache: cache, logits: buffer) }
                }
            }
        } catch {
            // A draft is only a guess: none this step.
            return []
        }
        return drafts
    }

    /// The most likely token (the lowest id among equals).
    static func argmax(_ logits: UnsafeMutableBufferPointer<Float>) -> Int32 {
        var best = 0
        for i in 1..<logits.count where logits[i] > logits[best] { best = i }
        return Int32(best)
    }
}
