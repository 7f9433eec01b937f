import CKernels
import Foundation
import Testing

@testable import Engine

/// YaRN RoPE scaling (`rope.scaling.type = yarn`) against a float64 reference written from its
/// definition (ggml's rope_yarn): the correction dimensions where a pair's wavelength fits β_fast
/// and β_slow turns in the original context, a linear ramp between them mixing the extrapolated
/// angle pos·θ_i with the interpolated one pos·θ_i / factor, and the magnitude scaled by
/// attn_factor · (1 + 0.1 ln factor). The end-to-end check against llama.cpp is ModelShapeTests'
/// `*-yarn-*` files.
@Suite struct RopeYaRNTests {
    static func reference(
        _ x: [Float], heads: Int, headDim: Int, nRot: Int, pos: Int, base: Float, factor: Double, original: Int,
        attnFactor: Double, halves: Bool
    ) -> [Double] {
        func corr(_ beta: Double) -> Double {
            Double(nRot) * log(Double(original) / (beta * 2 * Double.pi)) / (2 * log(Double(base)))
        }
        let low = max(0, corr(32).rounded(.down))
        let high = min(Double(nRot - 1), corr(1).rounded(.up))
        var out = x.map(Double.init)
        for h in 0..<heads {
            for i in stride(from: 0, to: nRot, by: 2) {
                let extrap = Double(pos) * pow(Double(base), -Double(i) / Double(nRot))
                let interp = extrap / factor
                let ramp = 1 - min(1, max(0, (Double(i / 2) - low) / max(0.001, high - low)))
                let angle = interp * (1 - ramp) + extrap * ramp
                let m = attnFactor * (1 + 0.1 * log(factor))
                let a = h * headDim + (halves ? i / 2 : i)
                let b = a + (halves ? nRot / 2 : 1)
                let (x0, x1) = (Double(x[a]), Double(x[b]))
                out[a] = m * (x0 * cos(angle) - x1 * sin(angle))
                out[b] = m * (x0 * sin(angle) + x1 * cos(angle))
            }
        }
        return out
    }

    @Test(arguments: [false, true])
    func rotationMatchesDefinition(halves: Bool) {
        let heads = 2
        let headDim = 64
        var rng = SeededRandom(seed: halves ? 41 : 42)
        for (nRot, base, factor, original) in [
            (64, Float(10_000), 32.0, 16), (48, 150_000, 32, 4096), (16, 10_000, 4, 16),
        ] {
            var yarn = ck_rope_yarn(
                ext_factor: 1, attn_factor: 0.9, beta_fast: 32, beta_slow: 1, n_ctx_orig: Int32(original))
            for pos in [0, 3, 15, 16, 40, 63, 5000] {
                let input = rng.floats(heads * headDim, 2)
                var got = input
                ck_rope_ext_yarn(
                    &got, Int32(heads), Int32(headDim), Int32(nRot), Int32(pos), base, Float(1 / factor), nil,
                    halves ? 1 : 0, &yarn)
                let expected = Self.reference(
                    input, heads: heads, headDim: headDim, nRot: nRot, pos: pos, base: base, factor: factor,
                    original: original, attnFactor: 0.9, halves: halves)
                // float angles at position p are off by about p ulps of the angle
                let bound = 2e-6 * Double(max(pos, 1)) * 8 + 1e-5
                for i in 0..<(heads * headDim) {
                    #expect(
                        abs(Double(got[i]) - expected[i]) <= bound,
                        "nRot \(nRot) pos \(pos) [\(i)]: \(got[i]) vs \(expected[i])")
                }
            }
        }
    }

    /// Without YaRN (NULL, or ext_factor 0 with attn_factor 1) the rotation is ck_rope_ext's bit for bit.
    @Test func noYaRNIsPlainRope() {
        var rng = SeededRandom(seed: 43)
        let input = rng.floats(4 * 32, 2)
        var plain = input
        var viaNull = input
        var viaZero = input
        var zero = ck_rope_yarn(ext_factor: 0, attn_factor: 1, beta_fast: 32, beta_slow: 1, n_ctx_orig: 16)
        ck_rope_ext(&plain, 4, 32, 32, 777, 10_000, 0.5, nil, 1)
        ck_rope_ext_yarn(&viaNull, 4, 32, 32, 777, 10_000, 0.5, nil, 1, nil)
        ck_rope_ext_yarn(&viaZero, 4, 32, 32, 777, 10_000, 0.5, nil, 1, &zero)
        #expect(plain.map(\.bitPattern) == viaNull.map(\.bitPattern))
        #expect(plain.map(\.bitPattern) == viaZero.map(\.bitPattern))
    }

    /// The tiny YaRN files' metadata as the engine reads it (llama.cpp's reading: ext_factor 1,
    /// the magnitude correction divided out of attn_factor, `rope.scaling.attn_factor` times it).
    @Test func configReadsYaRNMetadata() throws {
        let root = TestFixtures.referenceRoot.appendingPathComponent("tiny/shapes")
        let qwen3 = try ModelConfig(
            gguf: try GGUFFile(path: root.appendingPathComponent("qwen3-yarn-hd64-gqa4.gguf").path))
        #expect(qwen3.ropeScaling.extFactor == 1)
        #expect(qwen3.ropeScaling.freqScale == Float(1) / 32)
        #expect(qwen3.ropeScaling.originalContext == 16)
        #expect(abs(qwen3.ropeScaling.attnFactor - 0.9) < 1e-6)
        let llama = try ModelConfig(
            gguf: try GGUFFile(path: root.appendingPathComponent("llama-yarn-hd32-gqa2.gguf").path))
        #expect(abs(llama.ropeScaling.attnFactor - 1) < 1e-6)
        let plain = try ModelConfig(gguf: try GGUFFile(path: root.appendingPathComponent("qwen2-hd8-gqa8.gguf").path))
        #expect(plain.ropeScaling.extFactor == 0 && plain.ropeScaling.attnFactor == 1)
    }
}
