import Foundation

@testable import Engine

/// Runs a model on the prompt ids of a llama.cpp reference file (`greedy` and `logits` cases, as
/// in `Tests/Fixtures/reference/gemma3/` and `tiny/`) and reports how its answers compare. The checks
/// themselves (how many must match) are the tests' business.
struct ReferenceModelCheck {
    struct GreedyOutcome {
        let name: String
        let expected: [Int]
        let generated: [Int]
        /// At the first difference, how far (in logits) our choice was ahead of llama.cpp's token;
        /// nil when the runs agree. A small margin is a near-tie, not a wrong layer.
        let divergenceMargin: Float?
        /// Index of the first differing token (the common length when one is a prefix).
        var firstDifference: Int {
            zip(generated, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(generated.count, expected.count)
        }
        var identical: Bool { generated == expected }
    }

    struct LogitsOutcome {
        let name: String
        /// The reference's top ids with |p(ours) − p(llama.cpp)| for each.
        let probabilityDifferences: [(id: Int, difference: Double)]
        /// (id, our probability, llama.cpp's) for the reference's top 10, for reports.
        let probabilities: [(id: Int, ours: Double, theirs: Double)]
        /// The reference's top ids with |log p(ours) − log p(llama.cpp)| for each.
        var logprobDifferences: [(id: Int, difference: Double)] {
            probabilities.map { ($0.id, abs(log($0.ours) - log($0.theirs))) }
        }
        /// Whether our most likely token is the reference's.
        let sameTop: Bool
        var largestDifference: Double { probabilityDifferences.map(\.difference).max() ?? 0 }
        var largestLogprobDifference: Double { logprobDifferences.map(\.difference).max() ?? 0 }
    }

    let model: LlamaModel
    let reference: [String: Any]
    /// How the reference's server fed a prompt of n tokens to its model: the sizes of its
    /// decode calls, in order. The answers depend on it: llama.cpp's batched products round in
    /// other orders than its one-token ones (its Q4_K GEMM against its GEMV).
    let promptBatches: (Int) -> [Int]

    init(model: LlamaModel, reference: [String: Any], promptBatches: @escaping (Int) -> [Int] = { [$0] }) {
        self.model = model
        self.reference = reference
        self.promptBatches = promptBatches
    }

    /// llama-server's batches for a model with sliding-window attention (Gemma 3), which it can
    /// only roll back to checkpoints: it stops a prompt's batch 4 + 512 (its micro-batch) and 4
    /// tokens before the end to save one there (llama.cpp pull 20288), so "The capital of
    /// France is" (6 tokens) went in as 2 + 4 and the 787-token prompt as 271 + 512 + 4
    /// (server log, `-lv 5`, of the reference's commit). Each batch is cut in micro-batches of 512.
    static func llamaServerCheckpointBatches(_ count: Int) -> [Int] {
        var sizes: [Int] = []
        var done = 0
        while done < count {
            var batch = 0
            while done + batch < count {
                batch += 1
                let left = count - done - batch
                if batch == 2048 || left == 4 + 512 || left == 4 { break }
            }
            var rest = batch
            while rest > 0 {
                sizes.append(min(rest, 512))
                rest -= min(rest, 512)
            }
            done += batch
        }
        return sizes
    }

    /// The prompt through the model in `promptBatches`' sizes; the logits are its last token's.
    func feed(_ prompt: [Int32], cache: KVCache, logits: UnsafeMutableBufferPointer<Float>) throws {
        var start = 0
        for size in promptBatches(prompt.count) {
            try model.forward(tokens: Array(prompt[start..<start + size]), cache: cache, logits: logits)
            start += size
        }
    }

    static func ids(_ value: Any?) throws -> [Int32] {
        guard let list = value as? [Int] else { throw FixtureError("not a list of ids: \(String(describing: value))") }
        return list.map { Int32($0) }
    }

    /// Greedy decoding of every `greedy` case for as many tokens as the reference generated.
    func greedy() throws -> [GreedyOutcome] {
        guard let cases = reference["greedy"] as? [[String: Any]] else { throw FixtureError("no greedy cases") }
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: model.config.vocabularySize)
        defer { logits.deallocate() }
        return try cases.map { c in
            let prompt = try Self.ids(c["prompt_ids"])
            let expected = try Self.ids(c["generated_ids"]).map(Int.init)
            let cache = model.makeCache(capacity: prompt.count + expected.count + 1)
            try feed(prompt, cache: cache, logits: logits)
            var generated: [Int] = []
            var margin: Float? = nil
            while generated.count < expected.count {
                let next = Self.argmax(logits)
                let theirs = expected[generated.count]
                if margin == nil, generated == Array(expected.prefix(generated.count)), next != theirs {
                    margin = logits[next] - logits[theirs]
                }
                generated.append(next)
                try model.forward(tokens: [Int32(next)], cache: cache, logits: logits)
            }
            return GreedyOutcome(
                name: c["name"] as? String ?? "?", expected: expected, generated: generated, divergenceMargin: margin)
        }
    }

    /// The next-token distribution after each `logits` case's prompt against the reference's top 10.
    func logits() throws -> [LogitsOutcome] {
        guard let cases = reference["logits"] as? [[String: Any]] else { throw FixtureError("no logits cases") }
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: model.config.vocabularySize)
        defer { logits.deallocate() }
        return try cases.map { c in
            let prompt = try Self.ids(c["prompt_ids"])
            guard let top = c["top10"] as? [[String: Any]], !top.isEmpty else { throw FixtureError("no top10") }
            let cache = model.makeCache(capacity: prompt.count)
            try feed(prompt, cache: cache, logits: logits)
            let probabilities = Self.softmax(logits, count: model.config.vocabularySize)
            var differences: [(id: Int, difference: Double)] = []
            var pairs: [(id: Int, ours: Double, theirs: Double)] = []
            for entry in top {
                guard let id = entry["id"] as? Int, let logprob = entry["logprob"] as? Double else {
                    throw FixtureError("bad top10 entry \(entry)")
                }
                differences.append((id, abs(probabilities[id] - exp(logprob))))
                pairs.append((id, probabilities[id], exp(logprob)))
            }
            let ourTop = Self.argmax(logits)
            return LogitsOutcome(
                name: c["name"] as? String ?? "?", probabilityDifferences: differences, probabilities: pairs,
                sameTop: ourTop == top[0]["id"] as? Int)
        }
    }

    static func argmax(_ p: UnsafeMutableBufferPointer<Float>) -> Int {
        var best = 0
        for i in p.indices where p[i] > p[best] { best = i }
        return best
    }

    /// Softmax in double over the first `count` logits.
    static func softmax(_ logits: UnsafeMutableBufferPointer<Float>, count: Int) -> [Double] {
        var maximum = -Double.infinity
        for i in 0..<count { maximum = max(maximum, Double(logits[i])) }
        var out = [Double](repeating: 0, count: count)
        var sum = 0.0
        for i in 0..<count {
            out[i] = exp(Double(logits[i]) - maximum)
            sum += out[i]
        }
        return out.map { $0 / sum }
    }
}
