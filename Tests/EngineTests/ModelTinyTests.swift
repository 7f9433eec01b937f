import Foundation
import Testing

@testable import Engine

/// A tiny `llama` model written with GGUFWriter from a seeded RNG: 2 layers, width 64, 4 query
/// heads and 2 KV heads of 16, FFN 96, vocabulary 100, tensors in F32, F16, Q8_0 and Q4_1.
struct TinyModel {
    static let dim = 64
    static let heads = 4
    static let kvHeads = 2
    static let headDim = 16
    static let ffn = 96
    static let vocab = 100
    static let layers = 2
    static let context = 128
    static let eps: Float = 1e-5
    static let ropeBase: Float = 10000

    struct Tensor {
        var name: String
        var columns: Int
        var rows: Int  // 1 for vectors
        var type: GGMLType
        var values: [Float]  // the exact values the stored encoding decodes to
        var data: [UInt8]
    }

    var tensors: [Tensor] = []
    var metadata: [(String, GGUFValue)] = []

    /// - Parameters: `withOutput`: add a separate `output.weight`; `overrides`: per-tensor types.
    init(seed: UInt64 = 42, withOutput: Bool = false, overrides: [String: GGMLType] = [:]) {
        var rng = SeededRandom(seed: seed)
        metadata = [
            ("general.architecture", .string("llama")),
            ("llama.embedding_length", .uint32(UInt32(Self.dim))),
            ("llama.block_count", .uint32(UInt32(Self.layers))),
            ("llama.feed_forward_length", .uint32(UInt32(Self.ffn))),
            ("llama.attention.head_count", .uint32(UInt32(Self.heads))),
            ("llama.attention.head_count_kv", .uint32(UInt32(Self.kvHeads))),
            ("llama.rope.freq_base", .float32(Self.ropeBase)),
            ("llama.attention.layer_norm_rms_epsilon", .float32(Self.eps)),
            ("llama.context_length", .uint32(UInt32(Self.context))),
            ("llama.rope.dimension_count", .uint32(UInt32(Self.headDim))),
        ]
        func matrix(_ name: String, _ columns: Int, _ rows: Int, _ type: GGMLType) {
            let scale = (3 / Float(columns)).squareRoot()
            add(name, columns, rows, overrides[name] ?? type, rng.floats(columns * rows, scale))
        }
        func norm(_ name: String) {
            add(name, Self.dim, 1, .f32, (0..<Self.dim).map { _ in 1 + rng.float(0.2) })
        }
        let kv = Self.kvHeads * Self.headDim
        matrix("token_embd.weight", Self.dim, Self.vocab, .q8_0)
        let types: [[GGMLType]] = [
            [.q4_1, .f16, .q8_0, .f32, .q4_1, .f16, .q4_1],
            [.f32, .q4_1, .f16, .q8_0, .f16, .q4_1, .q8_0],
        ]
        for l in 0..<Self.layers {
            let p = "blk.\(l)."
            let t = types[l]
            norm(p + "attn_norm.weight")
            matrix(p + "attn_q.weight", Self.dim, Self.dim, t[0])
            matrix(p + "attn_k.weight", Self.dim, kv, t[1])
            matrix(p + "attn_v.weight", Self.dim, kv, t[2])
            matrix(p + "attn_output.weight", Self.dim, Self.dim, t[3])
            norm(p + "ffn_norm.weight")
            matrix(p + "ffn_gate.weight", Self.dim, Self.ffn, t[4])
            matrix(p + "ffn_up.weight", Self.dim, Self.ffn, t[5])
            matrix(p + "ffn_down.weight", Self.ffn, Self.dim, t[6])
        }
        norm("output_norm.weight")
        if withOutput { matrix("output.weight", Self.dim, Self.vocab, .f16) }
    }

    private mutating func add(_ name: String, _ columns: Int, _ rows: Int, _ type: GGMLType, _ raw: [Float]) {
        var data: [UInt8] = []
        var values: [Float] = []
        switch type {
        case .q4_1:
            data = ReferenceKernels.quantizeQ4_1(raw)
            values = ReferenceKernels.dequantizeQ4_1(data, count: raw.count)
        case .q8_0:
            data = ReferenceKernels.quantizeQ8_0(raw)
            values = ReferenceKernels.dequantizeQ8_0(data, count: raw.count)
        case .f16:
            for v in raw {
                let h = ReferenceKernels.floatToFP16(v)
                data += [UInt8(h & 0xFF), UInt8(h >> 8)]
            }
            values = ReferenceKernels.dequantizeF16(data, count: raw.count)
        case .f32:
            for v in raw { withUnsafeBytes(of: v.bitPattern.littleEndian) { data += $0 } }
            values = raw
        default:  // an encoding the model does not support: right size, meaningless content
            data = [UInt8](repeating: 0, count: type.rowBytes(elements: columns)! * rows)
            values = raw
        }
        tensors.append(Tensor(name: name, columns: columns, rows: rows, type: type, values: values, data: data))
    }

    func write(
        removing: Set<String> = [], metadataOverrides: [(String, GGUFValue)] = [], shapeOverrides: [String: [Int]] = [:]
    )
        throws -> String
    {
        var w = GGUFWriter()
        for (k, v) in metadata { w.add(k, v) }
        for (k, v) in metadataOverrides { w.add(k, v) }
        for t in tensors where !removing.contains(t.name) {
            let shape = shapeOverrides[t.name] ?? (t.rows == 1 ? [t.columns] : [t.columns, t.rows])
            w.addTensor(name: t.name, shape: shape, type: t.type, data: t.data)
        }
        let path = TestFixtures.temporaryPath("tiny.gguf")
        try w.write(to: path)
        return path
    }

    func values(_ name: String) -> [Float] { tensors.first { $0.name == name }!.values }

    // MARK: Plain reference forward: f32 everywhere, no activation quantization, no f16 cache.

    func referenceLogits(_ tokens: [Int32]) -> [Float] {
        let d = Self.dim
        let kvDim = Self.kvHeads * Self.headDim
        func matvec(_ name: String, _ x: [Float], rows: Int) -> [Float] {
            let w = values(name)
            let k = x.count
            return (0..<rows).map { r in
                var s: Double = 0
                for c in 0..<k { s += Double(w[r * k + c]) * Double(x[c]) }
                return Float(s)
            }
        }
        let embd = values("token_embd.weight")
        var x: [[Float]] = tokens.map { Array(embd[Int($0) * d..<(Int($0) + 1) * d]) }
        for l in 0..<Self.layers {
            let p = "blk.\(l)."
            var keys: [[Float]] = []
            var vals: [[Float]] = []
            var attnOut: [[Float]] = []
            for (t, xt) in x.enumerated() {
                let xn = ReferenceKernels.rmsNorm(xt, weight: values(p + "attn_norm.weight"), eps: Self.eps)
                let q = ReferenceKernels.rope(
                    matvec(p + "attn_q.weight", xn, rows: d), heads: Self.heads, headDim: Self.headDim,
                    nRot: Self.headDim, pos: t, base: Self.ropeBase)
                keys.append(
                    ReferenceKernels.rope(
                        matvec(p + "attn_k.weight", xn, rows: kvDim), heads: Self.kvHeads, headDim: Self.headDim,
                        nRot: Self.headDim, pos: t, base: Self.ropeBase))
                vals.append(matvec(p + "attn_v.weight", xn, rows: kvDim))
                var out: [Float] = []
                for h in 0..<Self.heads {
                    let kvh = h / (Self.heads / Self.kvHeads)
                    let qh = Array(q[h * Self.headDim..<(h + 1) * Self.headDim])
                    let slice = { (v: [Float]) in Array(v[kvh * Self.headDim..<(kvh + 1) * Self.headDim]) }
                    let scores = keys.map { ReferenceKernels.dot(qh, slice($0)) / Float(Self.headDim).squareRoot() }
                    let p = ReferenceKernels.softmax(scores)
                    var o = [Float](repeating: 0, count: Self.headDim)
                    for (j, v) in vals.enumerated() {
                        let vh = slice(v)
                        for i in 0..<Self.headDim { o[i] += p[j] * vh[i] }
                    }
                    out += o
                }
                attnOut.append(out)
            }
            for t in x.indices {
                let o = matvec(p + "attn_output.weight", attnOut[t], rows: d)
                for i in 0..<d { x[t][i] += o[i] }
                let xn = ReferenceKernels.rmsNorm(x[t], weight: values(p + "ffn_norm.weight"), eps: Self.eps)
                let g = matvec(p + "ffn_gate.weight", xn, rows: Self.ffn)
                let u = matvec(p + "ffn_up.weight", xn, rows: Self.ffn)
                let a = (0..<Self.ffn).map { ReferenceKernels.silu(g[$0]) * u[$0] }
                let down = matvec(p + "ffn_down.weight", a, rows: d)
                for i in 0..<d { x[t][i] += down[i] }
            }
        }
        let last = ReferenceKernels.rmsNorm(x[x.count - 1], weight: values("output_norm.weight"), eps: Self.eps)
        let head = tensors.contains { $0.name == "output.weight" } ? "output.weight" : "token_embd.weight"
        return matvec(head, last, rows: Self.vocab)
    }
}

/// max |a - b| relative to max |b|.
func relativeMaxError(_ a: [Float], _ b: [Float]) -> Float {
    let scale = b.map { abs($0) }.max() ?? 1
    return zip(a, b).map { abs($0 - $1) }.max()! / max(scale, 1e-6)
}

@Suite
struct ModelTinyTests {
    static let tokens: [Int32] = [3, 17, 99, 0, 42, 42, 7, 64, 15, 80, 1]

    func load(_ tiny: TinyModel, threads: Int = 2) throws -> LlamaModel {
        try LlamaModel(gguf: try GGUFFile(path: try tiny.write()), threads: threads)
    }

    func forward(_ model: LlamaModel, _ tokens: [Int32], _ cache: KVCache) throws -> [Float] {
        var logits = [Float](repeating: .nan, count: model.config.vocabularySize)
        try logits.withUnsafeMutableBufferPointer { try model.forward(tokens: tokens, cache: cache, logits: $0) }
        return logits
    }

    @Test func configIsReadFromMetadata() throws {
        let model = try load(TinyModel())
        let c = model.config
        #expect(c.embeddingLength == 64 && c.blockCount == 2 && c.feedForwardLength == 96)
        #expect(c.headCount == 4 && c.headCountKV == 2 && c.headDim == 16 && c.ropeDimensionCount == 16)
        #expect(c.vocabularySize == 100 && c.contextLength == 128)
        #expect(c.ropeFreqBase == 10000 && c.rmsNormEpsilon == 1e-5)
    }

    @Test(arguments: [false, true])
    func forwardMatchesPlainReference(withOutput: Bool) throws {
        let tiny = TinyModel(withOutput: withOutput)
        for threads in [1, 2, 3] {
            let model = try load(tiny, threads: threads)
            // every prefix, one token at a time
            let cache = model.makeCache(capacity: 32)
            for n in 1...Self.tokens.count {
                let got = try forward(model, [Self.tokens[n - 1]], cache)
                let expected = tiny.referenceLogits(Array(Self.tokens.prefix(n)))
                let err = relativeMaxError(got, expected)
                #expect(err < 0.03, "threads \(threads), \(n) tokens: relative error \(err)")
            }
            // the whole sequence as one batch
            let batchCache = model.makeCache(capacity: 32)
            let got = try forward(model, Self.tokens, batchCache)
            let err = relativeMaxError(got, tiny.referenceLogits(Self.tokens))
            if threads == 1 {
                print("tiny model vs plain reference (output.weight: \(withOutput)): relative error \(err)")
            }
            #expect(err < 0.03, "threads \(threads), batch: relative error \(err)")
        }
    }

    @Test func batchedForwardMatchesSingleTokenForwards() throws {
        let model = try load(TinyModel(seed: 7))
        let single = model.makeCache(capacity: 32)
        var last: [Float] = []
        for t in Self.tokens { last = try forward(model, [t], single) }
        for split in [Self.tokens.count, 5, 1 + 3] {
            let batched = model.makeCache(capacity: 32)
            var logits: [Float] = []
            var start = 0
            while start < Self.tokens.count {
                let end = min(Self.tokens.count, start + split)
                logits = try forward(model, Array(Self.tokens[start..<end]), batched)
                start = end
            }
            #expect(batched.count == Self.tokens.count && batched.tokens == Self.tokens)
            let err = relativeMaxError(logits, last)
            print("tiny model batched (chunks of \(split)) vs single-token: relative difference \(err)")
            #expect(err < 2e-3, "chunks of \(split): relative difference \(err)")
        }
    }

    @Test func longInputIsSplitIntoChunks() throws {
        let model = try load(TinyModel(seed: 9))
        let long = (0..<(LlamaModel.maxBatch + 9)).map { Int32($0 % 100) }
        let cache = model.makeCache(capacity: 100)
        let a = try forward(model, long, cache)
        #expect(cache.count == long.count)
        let cache2 = model.makeCache(capacity: 100)
        _ = try forward(model, Array(long.prefix(LlamaModel.maxBatch)), cache2)
        let b = try forward(model, Array(long.suffix(9)), cache2)
        #expect(a == b)
    }

    @Test func truncateThenReforwardReproducesLogits() throws {
        let model = try load(TinyModel(seed: 3))
        let cache = model.makeCache(capacity: 32)
        _ = try forward(model, Array(Self.tokens.prefix(5)), cache)
        let before = try forward(model, [Self.tokens[5]], cache)
        _ = try forward(model, Array(Self.tokens[6...]), cache)
        #expect(cache.count == Self.tokens.count)
        cache.truncate(to: 5)
        #expect(cache.count == 5 && cache.tokens == Array(Self.tokens.prefix(5)))
        let after = try forward(model, [Self.tokens[5]], cache)
        #expect(after == before)
        cache.truncate(to: 0)
        #expect(cache.count == 0)
        cache.truncate(to: 10)  // longer than held: no change
        #expect(cache.count == 0)
    }

    @Test func cacheOverflowThrowsWithoutChangingTheCache() throws {
        let model = try load(TinyModel())
        let cache = model.makeCache(capacity: 4)
        _ = try forward(model, [1, 2, 3], cache)
        #expect(throws: ModelError.cacheOverflow(count: 3, adding: 2, capacity: 4)) {
            _ = try forward(model, [4, 5], cache)
        }
        #expect(cache.count == 3)
        _ = try forward(model, [4], cache)
        #expect(cache.count == 4)
        #expect(model.makeCache(capacity: 10_000).capacity == TinyModel.context)
    }

    @Test func invalidTokenThrows() throws {
        let model = try load(TinyModel())
        let cache = model.makeCache(capacity: 8)
        #expect(throws: ModelError.invalidToken(100, vocabularySize: 100)) { _ = try forward(model, [1, 100], cache) }
        #expect(throws: ModelError.invalidToken(-1, vocabularySize: 100)) { _ = try forward(model, [-1], cache) }
        #expect(cache.count == 0)
    }

    @Test func missingTensorIsNamed() throws {
        let path = try TinyModel().write(removing: ["blk.1.ffn_up.weight"])
        let error = #expect(throws: ModelError.self) { _ = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1) }
        #expect(error == .missingTensor("blk.1.ffn_up.weight"))
        #expect(error?.description.contains("blk.1.ffn_up.weight") == true)
    }

    @Test func unsupportedTypeNamesTensorAndType() throws {
        let path = try TinyModel(overrides: ["blk.0.attn_q.weight": .q8_1]).write()
        let error = #expect(throws: ModelError.self) { _ = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1) }
        #expect(error == .unsupportedTensorType(tensor: "blk.0.attn_q.weight", type: .q8_1))
        let text = error?.description ?? ""
        #expect(text.contains("blk.0.attn_q.weight") && text.contains("Q8_1"), "\(text)")
    }

    @Test func wrongShapeIsReported() throws {
        let path = try TinyModel().write(shapeOverrides: ["blk.0.attn_k.weight": [64, 64]])
        #expect(throws: ModelError.wrongShape(tensor: "blk.0.attn_k.weight", expected: [64, 32], actual: [64, 64])) {
            _ = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1)
        }
    }

    /// A context cap shrinks what the engine serves, never past the trained context.
    @Test func contextLimitCapsTheTrainedContext() throws {
        let path = try TinyModel().write()
        let capped = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1, contextLimit: 32)
        #expect(capped.config.contextLength == 32 && capped.config.trainedContextLength == TinyModel.context)
        let wide = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1, contextLimit: 100_000)
        #expect(wide.config.contextLength == TinyModel.context)
        let cache = capped.makeCache(capacity: 1000)
        #expect(cache.capacity == 32)
    }

    @Test func unsupportedArchitectureAndMissingMetadata() throws {
        let gpt2 = try TinyModel().write(metadataOverrides: [("general.architecture", .string("gpt2"))])
        #expect(throws: ModelError.unsupportedArchitecture("gpt2")) {
            _ = try LlamaModel(gguf: try GGUFFile(path: gpt2), threads: 1)
        }
        // The message names what is supported, for the start-up error a user reads.
        #expect(
            ModelError.unsupportedArchitecture("gpt2").description
                == "unsupported architecture 'gpt2' (supported: llama, qwen2, qwen3, qwen3moe, gemma3, smollm3, phi3, mistral3, gpt-oss)"
        )
        var tiny = TinyModel()
        tiny.metadata.removeAll { $0.0 == "llama.block_count" }
        let noBlocks = try tiny.write()
        #expect(throws: ModelError.missingMetadata(key: "llama.block_count")) {
            _ = try LlamaModel(gguf: try GGUFFile(path: noBlocks), threads: 1)
        }
    }
}
