import CKernels
import Foundation

/// Log-probabilities of a sampled token and its most likely alternatives (`LogprobRecorder`).
extension Sampler {
    /// The processed distribution's, right after `sample` chose `chosen` from `logits` (which
    /// `sample` left penalized, and the caller masked): when sampling, the survivors of the
    /// top-k/top-p/min-p cut at the request's temperature, renormalized (the distribution the
    /// draw used); greedy, the whole penalized, masked distribution at temperature 1.
    func processedLogprob(
        of chosen: Int32, logits: UnsafeBufferPointer<Float>, top: Int
    ) -> (logprob: Float, top: [(id: Int32, logprob: Float)]) {
        guard options.temperature > 0, !candidates.isEmpty else {
            return Self.logSoftmax(of: chosen, logits: logits, top: top)
        }
        // After `draw`, each survivor's `p` is exp((logit - max) / temperature), unnormalized,
        // and the survivors are sorted most likely first.
        var sum: Float = 0
        for c in candidates { sum += c.p }
        let logSum = Foundation.log(sum)
        let chosenP = candidates.first { $0.id == chosen }?.p ?? 0
        let alternatives = candidates.prefix(top).map { (id: $0.id, logprob: Foundation.log($0.p) - logSum) }
        return (Foundation.log(chosenP) - logSum, alternatives)
    }

    /// log-softmax over `logits` (NaN and -infinity are impossible tokens, never listed): the
    /// log-probability of `chosen` and the `top` most likely tokens, most likely first (ties:
    /// lower id first). The normalizer is `ck_logsumexp`'s (8-lane partial sums: measured 15
    /// times closer to llama.cpp's double-precision scores than one running float sum), then one
    /// pass for the top set.
    static func logSoftmax(
        of chosen: Int32, logits: UnsafeBufferPointer<Float>, top: Int
    ) -> (logprob: Float, top: [(id: Int32, logprob: Float)]) {
        guard let base = logits.baseAddress, !logits.isEmpty else { return (-.infinity, []) }
        let logZ = ck_logsumexp(base, Int32(logits.count))
        guard logZ > -.infinity else { return (-.infinity, []) }
        return logprob(of: chosen, logits: logits, top: top, logZ: logZ)
    }

    /// The same with the row's normalizer log Σ exp already computed (`ck_rows_logsumexp`).
    static func logprob(
        of chosen: Int32, logits: UnsafeBufferPointer<Float>, top: Int, logZ: Float
    ) -> (logprob: Float, top: [(id: Int32, logprob: Float)]) {
        // The top set, kept sorted; a vocabulary pass with a threshold, as `applyTopK` does.
        var best: [(id: Int32, logit: Float)] = []
        if top > 0 {
            best.reserveCapacity(top + 1)
            for i in 0..<logits.count {
                let l = logits[i]
                guard l > -.infinity else { continue }
                if best.count == top, l <= best[top - 1].logit { continue }
                var at = best.count
                while at > 0 && l > best[at - 1].logit { at -= 1 }
                best.insert((Int32(i), l), at: at)
                if best.count > top { best.removeLast() }
            }
        }
        let c = Int(chosen)
        let chosenLogit = c >= 0 && c < logits.count ? logits[c] : -.infinity
        return (chosenLogit - logZ, best.map { (id: $0.id, logprob: $0.logit - logZ) })
    }
}
