import Foundation

extension Float {
    fileprivate var exponential: Float { Foundation.exp(self) }
}

/// Chooses the next token from logits: repetition penalty, then OpenAI's frequency and presence
/// penalties, then greedy or top-k → top-p → min-p → temperature → a draw from the seeded
/// generator (the order llama.cpp's default chain uses, so options mean the same thing there and
/// here).
///
/// The penalties see the logits after a constraint's mask (the caller masks first): a masked
/// token is `-infinity`, and dividing, multiplying or subtracting a finite number leaves it
/// `-infinity`, so a penalty never brings back a token the grammar forbids; it only reorders the
/// allowed ones.
///
/// Owns its scratch buffers: sampling allocates nothing per token after the first.
public struct Sampler: Sendable {
    public let options: SamplingOptions
    public let seed: UInt64
    private var rng: SeededGenerator
    private(set) var candidates: [Candidate] = []
    /// The top-k selection's output, swapped with `candidates` so both keep their capacity.
    private var kept: [Candidate] = []
    /// Marks tokens already penalized this step (one flag per vocabulary entry, cleared after).
    private var penalized: [Bool] = []
    /// How many times each token occurs in the answer (one count per vocabulary entry): filled
    /// from `generated` and cleared again within each step, so nothing carries over from one
    /// answer, or one call, to the next.
    private var counts: [Int32] = []

    struct Candidate {
        var id: Int32
        var logit: Float
        var p: Float = 0
    }

    public init(options: SamplingOptions) {
        self.options = options
        self.seed = options.seed ?? UInt64.random(in: 0...UInt64.max)
        self.rng = SeededGenerator(seed: seed)
    }

    /// Picks a token. `logits` is modified in place by the penalties.
    /// `recent` holds the sequence so far (prompt and generated), newest last: the repetition
    /// penalty's look-back. `generated` holds this answer's tokens only (the tail of `recent`
    /// after the prompt): what the frequency and presence penalties count.
    public mutating func sample(
        logits: UnsafeMutableBufferPointer<Float>, recent: ArraySlice<Int32>, generated: ArraySlice<Int32>
    ) -> Int32 {
        applyRepeatPenalty(logits: logits, recent: recent)
        applyFrequencyAndPresencePenalties(logits: logits, generated: generated)
        if options.temperature <= 0 {
            return Self.argmax(UnsafeBufferPointer(logits))
        }
        candidates.removeAll(keepingCapacity: true)
        candidates.reserveCapacity(logits.count)
        for (i, l) in logits.enumerated() where !l.isNaN {
            candidates.append(Candidate(id: Int32(i), logit: l))
        }
        guard !candidates.isEmpty else { return 0 }
        applyTopK()
        softmax()
        applyTopP()
        applyMinP()
        return draw()
    }

    /// The highest logit; ties go to the lowest id, as in llama.cpp.
    public static func argmax(_ logits: UnsafeBufferPointer<Float>) -> Int32 {
        var best = 0
        var bestValue = -Float.infinity
        for i in 0..<logits.count where logits[i] > bestValue {
            bestValue = logits[i]
            best = i
        }
        return Int32(best)
    }

    mutating func applyRepeatPenalty(logits: UnsafeMutableBufferPointer<Float>, recent: ArraySlice<Int32>) {
        guard options.repeatPenalty != 1, options.repeatLastN > 0 else { return }
        if penalized.count < logits.count { penalized = Array(repeating: false, count: logits.count) }
        let window = recent.suffix(options.repeatLastN)
        for id in window where id >= 0 && Int(id) < logits.count && !penalized[Int(id)] {
            penalized[Int(id)] = true
            let l = logits[Int(id)]
            logits[Int(id)] = l > 0 ? l / options.repeatPenalty : l * options.repeatPenalty
        }
        for id in window where id >= 0 && Int(id) < logits.count { penalized[Int(id)] = false }
    }

    /// OpenAI's definition: `logit[j] -= count[j] * frequency_penalty + (count[j] > 0 ? 1 : 0) *
    /// presence_penalty`, `count[j]` being how often token j occurs in this answer so far.
    /// Counting the whole answer each step costs two passes over it (a few µs for thousands of
    /// tokens, against milliseconds for the model's step) and keeps no state between calls.
    mutating func applyFrequencyAndPresencePenalties(
        logits: UnsafeMutableBufferPointer<Float>, generated: ArraySlice<Int32>
    ) {
        guard options.frequencyPenalty != 0 || options.presencePenalty != 0 else { return }
        // Grown on the first call, answer or not, so no later token allocates.
        if counts.count < logits.count { counts = Array(repeating: 0, count: logits.count) }
        for id in generated where id >= 0 && Int(id) < logits.count { counts[Int(id)] += 1 }
        for id in generated where id >= 0 && Int(id) < logits.count && counts[Int(id)] > 0 {
            let i = Int(id)
            logits[i] -= Float(counts[i]) * options.frequencyPenalty + options.presencePenalty
            counts[i] = 0
        }
    }

    /// Keeps the k highest logits, sorted descending (ties: lower id first).
    mutating func applyTopK() {
        let k = options.topK > 0 ? min(options.topK, candidates.count) : candidates.count
        let before: (Candidate, Candidate) -> Bool = { $0.logit > $1.logit || ($0.logit == $1.logit && $0.id < $1.id) }
        if k < candidates.count {
            // Selection with a threshold: one pass keeps anything that could be in the top k,
            // so only a handful of candidates get sorted instead of the whole vocabulary.
            kept.removeAll(keepingCapacity: true)
            kept.reserveCapacity(candidates.count)
            kept.append(contentsOf: candidates[0..<k])
            kept.sort(by: before)
            for c in candidates[k...] where before(c, kept[k - 1]) {
                var i = k - 1
                while i > 0 && before(c, kept[i - 1]) {
                    kept[i] = kept[i - 1]
                    i -= 1
                }
                kept[i] = c
            }
            swap(&candidates, &kept)
        } else {
            candidates.withUnsafeMutableBufferPointer { Self.heapSort($0, by: before) }
        }
    }

    /// Sorts in place with no scratch memory (the standard library's sort allocates a buffer on
    /// every call, and without top-k this runs over the whole vocabulary every token). `before`
    /// is a strict total order here (ids break ties), so the result is the same as any sort's.
    static func heapSort(_ a: UnsafeMutableBufferPointer<Candidate>, by before: (Candidate, Candidate) -> Bool) {
        // A heap whose root is the element that sorts last, moved to the end one at a time.
        func siftDown(_ start: Int, _ end: Int) {
            var root = start
            while true {
                var child = 2 * root + 1
                guard child < end else { return }
                if child + 1 < end && before(a[child], a[child + 1]) { child += 1 }
                guard before(a[root], a[child]) else { return }
                a.swapAt(root, child)
                root = child
            }
        }
        var i = a.count / 2
        while i > 0 {
            i -= 1
            siftDown(i, a.count)
        }
        var end = a.count
        while end > 1 {
            end -= 1
            a.swapAt(0, end)
            siftDown(0, end)
        }
    }

    /// Probabilities of the untempered logits (candidates are sorted descending).
    mutating func softmax() {
        let maxLogit = candidates[0].logit
        var sum: Float = 0
        for i in candidates.indices {
            let e = (candidates[i].logit - maxLogit).exponential
            candidates[i].p = e
            sum += e
        }
        for i in candidates.indices { candidates[i].p /= sum }
    }

    mutating func applyTopP() {
        guard options.topP < 1 else { return }
        var cumulative: Float = 0
        for i in candidates.indices {
            cumulative += candidates[i].p
            if cumulative >= options.topP {
                candidates.removeSubrange((i + 1)...)
                return
            }
        }
    }

    mutating func applyMinP() {
        guard options.minP > 0 else { return }
        let threshold = candidates[0].p * options.minP
        if let cut = candidates.firstIndex(where: { $0.p < threshold }), cut > 0 {
            candidates.removeSubrange(cut...)
        }
    }

    /// Softmax of the survivors at the requested temperature, then one draw.
    mutating func draw() -> Int32 {
        let t = options.temperature
        let maxLogit = candidates[0].logit
        var sum: Float = 0
        for i in candidates.indices {
            let e = ((candidates[i].logit - maxLogit) / t).exponential
            candidates[i].p = e
            sum += e
        }
        var r = rng.nextUnitFloat() * sum
        for c in candidates {
            r -= c.p
            if r < 0 { return c.id }
        }
        return candidates[candidates.count - 1].id
    }
}
