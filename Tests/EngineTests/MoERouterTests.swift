import CKernels
import Foundation
import Testing

/// The experts' router (`ck_moe_route`) and weighted sum (`ck_moe_combine`) on hand-computed
/// cases: which experts a token takes (ties to the lower index), their weights with and without
/// renormalisation, softmax and sigmoid gating. The arithmetic against llama.cpp is
/// `MoEShapeTests`'.
struct MoERouterTests {
    struct Route {
        var ids: [Int32]
        var weights: [Float]
    }

    static func route(_ logits: [Float], k: Int, gating: Int32 = Int32(CK_GATING_SOFTMAX), normalize: Bool) -> Route {
        var ids = [Int32](repeating: -1, count: k)
        var weights = [Float](repeating: .nan, count: k)
        var probabilities = [Float](repeating: 0, count: logits.count)
        ck_moe_route(
            logits, 1, Int32(logits.count), Int32(k), gating, normalize ? 1 : 0, &probabilities, &ids, &weights)
        return Route(ids: ids, weights: weights)
    }

    @Test func takesTheMostProbableFirstAndRenormalises() {
        let r = Self.route([1, 3, 2, 0], k: 2, normalize: true)
        #expect(r.ids == [1, 2])
        // e^3 / (e^3 + e^2) and e^2 / (e^3 + e^2)
        #expect(abs(r.weights[0] - 0.731_058_6) < 1e-6)
        #expect(abs(r.weights[1] - 0.268_941_4) < 1e-6)
    }

    @Test func withoutRenormalisingTheWeightsAreTheProbabilities() {
        let r = Self.route([0, 0, 0, 0], k: 2, normalize: false)
        #expect(r.ids == [0, 1])
        #expect(r.weights == [0.25, 0.25])
        let one = Self.route([1, 3, 2, 0], k: 1, normalize: false)
        let sum = exp(-3.0) + exp(-1.0) + exp(-2.0) + 1
        #expect(one.ids == [1])
        #expect(abs(Double(one.weights[0]) - 1 / sum) < 1e-6)
    }

    @Test func tiesGoToTheLowerIndex() {
        #expect(Self.route([2, 5, 5, 1], k: 1, normalize: true).ids == [1])
        let two = Self.route([2, 5, 5, 1], k: 2, normalize: true)
        #expect(two.ids == [1, 2])
        #expect(two.weights == [0.5, 0.5])
        // One expert used: its renormalised weight is exactly 1.
        #expect(Self.route([0.3, -1, 2.5, 2.4], k: 1, normalize: true).weights == [1])
    }

    @Test func sigmoidGatingWeighsEachExpertAlone() {
        let r = Self.route([0, 2, -1], k: 2, gating: Int32(CK_GATING_SIGMOID), normalize: false)
        #expect(r.ids == [1, 0])
        #expect(abs(r.weights[0] - 0.880_797_1) < 1e-6)
        #expect(r.weights[1] == 0.5)
    }

    /// 40 experts: two groups of 16 through ggml's vector exp, 8 through libm's; the probabilities
    /// agree with a float64 softmax to float precision and the chosen ones are the largest.
    @Test func manyExpertsAgreeWithAFloat64Softmax() {
        var generator = SystemRandomNumberGenerator()
        let logits = (0..<40).map { _ in Float.random(in: -4...4, using: &generator) }
        let r = Self.route(logits, k: 8, normalize: false)
        let m = Double(logits.max()!)
        let sum = logits.reduce(0.0) { $0 + exp(Double($1) - m) }
        let order = logits.indices.sorted { logits[$0] > logits[$1] || (logits[$0] == logits[$1] && $0 < $1) }
        #expect(r.ids.map(Int.init) == Array(order.prefix(8)))
        for (id, weight) in zip(r.ids, r.weights) {
            let p = exp(Double(logits[Int(id)]) - m) / sum
            #expect(abs(Double(weight) - p) <= 1e-6 * p)
        }
    }

    @Test func combineAddsTheWeightedOutputsInChoiceOrder() {
        // Two tokens, two slots each, width 2.
        let outputs: [Float] = [1, 2, 3, 4, /* token 1 */ 10, 20, -1, 1]
        let weights: [Float] = [0.5, 0.25, 1, 2]
        var out = [Float](repeating: .nan, count: 4)
        ck_moe_combine(outputs, weights, 2, 2, 2, &out)
        #expect(out == [1.25, 2, 8, 22])
        // The order of the adds: (a·1 + b·1) + c·1 rounds differently from a + (b + c).
        let big: [Float] = [1e8, -1e8, 1]
        var one = [Float](repeating: .nan, count: 1)
        ck_moe_combine(big, [1, 1, 1], 1, 3, 1, &one)
        #expect(one == [1])
    }
}
