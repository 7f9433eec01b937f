import CKernels
import Foundation
import Testing

@testable import Engine

/// gpt-oss's gated activation (ggml's `swiglu_oai`, llama.cpp's LLM_FFN_SWIGLU_OAI_MOE with
/// α = 1.702 and limit 7): the gate clamped to ≤ 7, up to [−7, 7], then g·σ(α·g)·(up + 1).
/// The C kernel against a Swift reference written from that definition in ggml's float
/// operations (bit for bit) and against float64 (to a few ulps), and ck_rows_glu's rows against
/// the whole-buffer function.
@Suite struct SwigluOAITests {
    static let alpha: Float = 1.702
    static let limit: Float = 7

    /// ggml-cpu's loop: x = min(gate, limit), y = clamp(up, −limit, limit),
    /// out = x / (1 + expf(α · −x)) · (y + 1).
    static func reference(_ gate: Float, _ up: Float) -> Float {
        let x = min(gate, limit)
        let y = min(max(up, -limit), limit)
        let glu = x / (1 + Foundation.expf(alpha * -x))
        return glu * (y + 1)
    }

    static func inputs() -> (gate: [Float], up: [Float]) {
        var rng = SeededRandom(seed: 38)
        // Past both clamps on each side, and the corners by hand.
        var gate = rng.floats(4000, 12)
        var up = rng.floats(4000, 12)
        gate += [7, 7.0001, -7, 100, -100, 0, -0.0, 6.99, -30]
        up += [7, -7, -7.0001, 100, -100, 0, -1, 8, -8]
        return (gate, up)
    }

    @Test func kernelMatchesGGMLsFloatOperations() {
        let (gate, up) = Self.inputs()
        var out = [Float](repeating: .nan, count: gate.count)
        ck_swiglu_oai_mul(gate, up, &out, Int32(gate.count), CK_SWIGLU_OAI_ALPHA, CK_SWIGLU_OAI_LIMIT)
        let bad = gate.indices.filter { out[$0].bitPattern != Self.reference(gate[$0], up[$0]).bitPattern }
        #expect(bad.isEmpty, "\(bad.count) differ, first at \(bad.first ?? -1)")
        #expect(CK_SWIGLU_OAI_ALPHA == Self.alpha && CK_SWIGLU_OAI_LIMIT == Self.limit)
    }

    @Test func kernelMatchesFloat64Definition() {
        let (gate, up) = Self.inputs()
        var out = [Float](repeating: .nan, count: gate.count)
        ck_swiglu_oai_mul(gate, up, &out, Int32(gate.count), 1.702, 7)
        for i in gate.indices {
            let x = min(Double(gate[i]), 7)
            let y = min(max(Double(up[i]), -7), 7)
            let expected = x / (1 + exp(-Double(Float(1.702)) * x)) * (y + 1)
            #expect(abs(Double(out[i]) - expected) <= 4e-6 * max(1, abs(expected)), "gate \(gate[i]) up \(up[i])")
        }
        // The clamps: a gate past the limit acts as the limit, an up past it as ±limit.
        var clamped = [Float](repeating: 0, count: 2)
        ck_swiglu_oai_mul([50, 7], [-50, -7], &clamped, 2, 1.702, 7)
        #expect(clamped[0] == clamped[1])
    }

    @Test func rowsMatchTheWholeBufferFunction() {
        let (gate, up) = Self.inputs()
        let width = 100
        let n = 40
        var expected = [Float](repeating: .nan, count: n * width)
        ck_swiglu_oai_mul(gate, up, &expected, Int32(n * width), CK_SWIGLU_OAI_ALPHA, CK_SWIGLU_OAI_LIMIT)
        let pool = ComputePool(threads: 2)
        var got = [Float](repeating: .nan, count: n * width)
        ck_rows_glu(pool.raw, Int32(CK_GLU_SWIGLU_OAI), gate, up, &got, Int32(n), Int32(width))
        #expect(got.map(\.bitPattern) == expected.map(\.bitPattern))
        #expect(Architecture.Activation.swigluOAI.kernelKind == Int32(CK_GLU_SWIGLU_OAI))
    }
}
