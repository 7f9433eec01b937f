import Foundation
import Testing

@testable import Engine

/// Loading the dense families of issue #38 (`smollm3`, `phi3`, `mistral3`): which layers rotate,
/// fused matrices read as views of one tensor, YaRN and the temperature read, and what is
/// refused at load with the key or tensor named. Their arithmetic against llama.cpp is in
/// `ModelShapeTests`.
@Suite struct DenseFamilyLoadTests {
    static func shape(_ name: String) throws -> LlamaModel {
        let path = TestFixtures.referenceRoot.appendingPathComponent("tiny/shapes/\(name).gguf").path
        return try LlamaModel(gguf: try GGUFFile(path: path), threads: 1)
    }

    /// TinyModel's llama file under another `general.architecture` (its keys renamed).
    static func tiny(as architecture: String, extraTensors: [TinyModel.Tensor] = []) -> TinyModel {
        var model = TinyModel()
        model.metadata = model.metadata.map { key, value in
            key == "general.architecture"
                ? (key, GGUFValue.string(architecture))
                : (key.replacingOccurrences(of: "llama.", with: architecture + "."), value)
        }
        model.tensors += extraTensors
        return model
    }

    static func load(_ path: String) throws { _ = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1) }

    @Test func smolLM3SkipsRopeOnEveryFourthLayer() throws {
        let arch = Architecture.smollm3
        #expect((0..<12).filter { !arch.usesRope(layer: $0) } == [3, 7, 11])
        #expect((0..<12).allSatisfy { Architecture.llama.usesRope(layer: $0) })
        #expect(try Self.shape("smollm3-hd8-gqa4").config.blockCount == 8)
    }

    @Test func phi3FusedMatricesAreViewsOfOneTensor() throws {
        let model = try Self.shape("phi3-hd32-gqa1")
        let c = model.config
        let layer = model.layers[0]
        #expect(layer.wq.rows == c.queryDim && layer.wk.rows == c.kvDim && layer.wv.rows == c.kvDim)
        #expect(layer.wk.data == layer.wq.data + c.queryDim * layer.wq.rowBytes)
        #expect(layer.wv.data == layer.wk.data + c.kvDim * layer.wk.rowBytes)
        guard case .dense(let gate, let up, _) = layer.feedForward else {
            Issue.record("phi3's feed-forward is dense")
            return
        }
        #expect(gate.rows == c.feedForwardLength && up.rows == c.feedForwardLength)
        #expect(up.data == gate.data + c.feedForwardLength * gate.rowBytes)
        // The file's sliding_window is ignored for phi3, as llama.cpp ignores it.
        #expect(c.slidingWindow == 0 && model.layers.allSatisfy { $0.window == 0 })
    }

    @Test func phi3PicksLongRopeFactorsPastTheOriginalContext() throws {
        let long = try Self.shape("phi3-hd16-gqa2-longrope")
        #expect(long.config.ropeScaling.originalContext == 128)
        #expect(abs(long.config.ropeScaling.attnFactor - (1 + log(4.0) / log(128.0)).squareRoot()) < 1e-6)
        let path = TestFixtures.referenceRoot.appendingPathComponent("tiny/shapes/phi3-hd16-gqa2-longrope.gguf").path
        let gguf = try GGUFFile(path: path)
        let longFactors = try VectorLoader.load(gguf: gguf, name: "rope_factors_long.weight", count: 8)
        let shortFactors = try VectorLoader.load(gguf: gguf, name: "rope_factors_short.weight", count: 8)
        #expect(long.ropeFrequencyFactors == longFactors)
        // Served within the original context, the short factors.
        let short = try LlamaModel(gguf: gguf, threads: 1, contextLimit: 128)
        #expect(short.ropeFrequencyFactors == shortFactors)
    }

    @Test func mistral3ReadsYarnAndTheTemperature() throws {
        let c = try Self.shape("mistral3-hd32-gqa4-yarn").config
        #expect(c.ropeFreqScale == Float(1) / 16)
        #expect(c.ropeScaling.extFactor == 1)
        #expect(c.ropeScaling.originalContext == 16)
        #expect(c.ropeScaling.temperatureScale == Float(0.1))
        // llama.cpp's factor for positions 0, 16 and 40: 1 + 0.1 · ln(⌊p / 16⌋ + 1).
        #expect(c.ropeScaling.temperature(at: 0) == 1)
        #expect(c.ropeScaling.temperature(at: 16) == Float(log(2.0) * Double(Float(0.1)) + 1))
        #expect(c.ropeScaling.temperature(at: 40) == Float(log(3.0) * Double(Float(0.1)) + 1))
    }

    @Test func mixtureOfExpertsMistral3IsRefusedNamingTheKey() throws {
        let path = try Self.tiny(as: "mistral3").write(metadataOverrides: [("mistral3.expert_count", .uint32(8))])
        let error = #expect(throws: ModelError.self) { try Self.load(path) }
        #expect(error?.description.contains("mistral3.expert_count") == true, "\(String(describing: error))")
        // Without it, the same file loads as the llama layer.
        try Self.load(try Self.tiny(as: "mistral3").write())
    }

    @Test func biasesThePassDoesNotAddAreRefusedNamingTheTensor() throws {
        let bias = TinyModel.Tensor(
            name: "blk.1.attn_output.bias", columns: TinyModel.dim, rows: 1, type: .f32,
            values: [Float](repeating: 0, count: TinyModel.dim),
            data: [UInt8](repeating: 0, count: TinyModel.dim * 4))
        let path = try Self.tiny(as: "mistral3", extraTensors: [bias]).write()
        let error = #expect(throws: ModelError.self) { try Self.load(path) }
        #expect(error?.description.contains("blk.1.attn_output.bias") == true, "\(String(describing: error))")
        // Expert biases too, where the recipe adds none (gpt-oss's recipe adds them).
        let expertBias = TinyModel.Tensor(
            name: "blk.0.ffn_gate_exps.bias", columns: TinyModel.dim, rows: 1, type: .f32,
            values: [Float](repeating: 0, count: TinyModel.dim),
            data: [UInt8](repeating: 0, count: TinyModel.dim * 4))
        let expertPath = try Self.tiny(as: "mistral3", extraTensors: [expertBias]).write()
        let expertError = #expect(throws: ModelError.self) { try Self.load(expertPath) }
        #expect(expertError?.description.contains("blk.0.ffn_gate_exps.bias") == true)
    }

    /// Attention sinks outside gpt-oss: refused, not silently left out of the softmax.
    @Test func attentionSinksOutsideGptOssAreRefusedNamingTheTensor() throws {
        let heads = TinyModel.heads
        let sinks = TinyModel.Tensor(
            name: "blk.0.attn_sinks.weight", columns: heads, rows: 1, type: .f32,
            values: [Float](repeating: 0, count: heads), data: [UInt8](repeating: 0, count: heads * 4))
        for family in ["llama", "mistral3"] {
            let path = try Self.tiny(as: family, extraTensors: [sinks]).write()
            let error = #expect(throws: ModelError.self) { try Self.load(path) }
            #expect(error?.description.contains("blk.0.attn_sinks.weight") == true, "\(String(describing: error))")
        }
    }

    /// YaRN is read for every family (as llama.cpp reads it); its betas and log multiplier only
    /// where the recipe reads them (mistral3 here, as in llama.cpp); other types are refused.
    @Test func yarnIsReadForEveryFamilyItsTuningWhereTheRecipeReadsIt() throws {
        let tuning: [(String, GGUFValue)] = [
            ("rope.scaling.type", .string("yarn")), ("rope.scaling.factor", .float32(4)),
            ("rope.scaling.yarn_beta_fast", .float32(8)), ("rope.scaling.yarn_beta_slow", .float32(2)),
        ]
        let llamaPath = try TinyModel().write(metadataOverrides: tuning.map { ("llama." + $0.0, $0.1) })
        let llama = try ModelConfig(gguf: try GGUFFile(path: llamaPath))
        #expect(llama.ropeScaling.extFactor == 1 && llama.ropeFreqScale == Float(1) / 4)
        #expect(llama.ropeScaling.betaFast == 32 && llama.ropeScaling.betaSlow == 1)
        let mistralPath = try Self.tiny(as: "mistral3").write(
            metadataOverrides: tuning.map { ("mistral3." + $0.0, $0.1) })
        let mistral = try ModelConfig(gguf: try GGUFFile(path: mistralPath))
        #expect(mistral.ropeScaling.betaFast == 8 && mistral.ropeScaling.betaSlow == 2)
        let longrope = try Self.tiny(as: "mistral3").write(metadataOverrides: [
            ("mistral3.rope.scaling.type", .string("longrope"))
        ])
        let refused = #expect(throws: ModelError.self) { try Self.load(longrope) }
        #expect(refused?.description.contains("mistral3.rope.scaling.type 'longrope'") == true)
    }
}
