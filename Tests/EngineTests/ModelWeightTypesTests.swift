import Foundation
import Testing

@testable import Engine

/// A tiny `llama` model wide enough for the K-quants (width 256, FFN 512, 4 query heads and 2 KV
/// heads of 64, vocabulary 64, 2 layers) whose matrices use every weight type the engine computes
/// with, mixed per tensor as real files mix them; random quant blocks with sane scales.
struct WideTinyModel {
    static let dim = 256
    static let heads = 4
    static let kvHeads = 2
    static let headDim = 64
    static let ffn = 512
    static let vocab = 64
    static let eps: Float = 1e-5
    static let ropeBase: Float = 10000
    static let mixedLayerTypes: [[GGMLType]] = [
        // q, k, v, output, gate, up, down
        [.q4_K, .q5_0, .q8_0, .q6_K, .q5_K, .q2_K, .q3_K],
        [.q4_0, .q5_1, .bf16, .q4_K, .q6_K, .q4_1, .f16],
    ]

    var tensors: [(name: String, shape: [Int], type: GGMLType, data: [UInt8], values: [Float])] = []
    /// Per layer, the types of q, k, v, output, gate, up, down.
    let layerTypes: [[GGMLType]]

    init(seed: UInt64 = 5, embedding: GGMLType = .q6_K, layerTypes: [[GGMLType]] = Self.mixedLayerTypes) {
        self.layerTypes = layerTypes
        var rng = SeededRandom(seed: seed)
        func matrix(_ name: String, _ columns: Int, _ rows: Int, _ type: GGMLType) {
            let data = RandomWeights.matrix(
                type, rows: rows, columns: columns, scale: (1 / Float(columns)).squareRoot(), rng: &rng)
            let values = ReferenceKernels.dequantize(data, type: type, count: rows * columns)!
            tensors.append((name, [columns, rows], type, data, values))
        }
        func norm(_ name: String, _ type: GGMLType = .f32) {
            let data = RandomWeights.row(type, columns: Self.dim, scale: 0.2, rng: &rng)
            // 1 + small: norm weights near one.
            var values = ReferenceKernels.dequantize(data, type: type, count: Self.dim)!
            var bytes = data
            if type == .f32 {
                values = values.map { 1 + $0 }
                bytes = values.flatMap { v in withUnsafeBytes(of: v.bitPattern.littleEndian, Array.init) }
            }
            tensors.append((name, [Self.dim], type, bytes, values))
        }
        matrix("token_embd.weight", Self.dim, Self.vocab, embedding)
        let kv = Self.kvHeads * Self.headDim
        for (l, t) in layerTypes.enumerated() {
            let p = "blk.\(l)."
            norm(p + "attn_norm.weight", l == 1 ? .bf16 : .f32)
            matrix(p + "attn_q.weight", Self.dim, Self.dim, t[0])
            matrix(p + "attn_k.weight", Self.dim, kv, t[1])
            matrix(p + "attn_v.weight", Self.dim, kv, t[2])
            matrix(p + "attn_output.weight", Self.dim, Self.dim, t[3])
            norm(p + "ffn_norm.weight", l == 1 ? .f16 : .f32)
            matrix(p + "ffn_gate.weight", Self.dim, Self.ffn, t[4])
            matrix(p + "ffn_up.weight", Self.dim, Self.ffn, t[5])
            matrix(p + "ffn_down.weight", Self.ffn, Self.dim, t[6])
        }
        norm("output_norm.weight")
    }

    func write(
        replacing: [String: (shape: [Int], type: GGMLType, data: [UInt8])] = [:], contextLength: Int = 64
    ) throws -> String {
        var w = GGUFWriter()
        let metadata: [(String, GGUFValue)] = [
            ("general.architecture", .string("llama")),
            ("llama.embedding_length", .uint32(UInt32(Self.dim))),
            ("llama.block_count", .uint32(UInt32(layerTypes.count))),
            ("llama.feed_forward_length", .uint32(UInt32(Self.ffn))),
            ("llama.attention.head_count", .uint32(UInt32(Self.heads))),
            ("llama.attention.head_count_kv", .uint32(UInt32(Self.kvHeads))),
            ("llama.rope.freq_base", .float32(Self.ropeBase)),
            ("llama.attention.layer_norm_rms_epsilon", .float32(Self.eps)),
            ("llama.context_length", .uint32(UInt32(contextLength))),
            ("llama.rope.dimension_count", .uint32(UInt32(Self.headDim))),
        ]
        for (k, v) in metadata { w.add(k, v) }
        for t in tensors {
            let r = replacing[t.name]
            w.addTensor(name: t.name, shape: r?.shape ?? t.shape, type: r?.type ?? t.type, data: r?.data ?? t.data)
        }
        let path = TestFixtures.temporaryPath("wide-tiny.gguf")
        try w.write(to: path)
        return path
    }

    func values(_ name: String) -> [Float] { tensors.first { $0.name == name }!.values }

    /// Plain forward pass in f32/Double from the decoded weights: no activation quantization, no
    /// f16 cache. Logits of the last token.
    func referenceLogits(_ tokens: [Int32]) -> [Float] {
        let d = Self.dim
        let hd = Self.headDim
        func matvec(_ name: String, _ x: [Float]) -> [Float] {
            let w = values(name)
            let k = x.count
            return (0..<w.count / k).map { r in
                var s: Double = 0
                for c in 0..<k { s += Double(w[r * k + c]) * Double(x[c]) }
                return Float(s)
            }
        }
        func rope(_ v: [Float], heads: Int, pos: Int) -> [Float] {
            ReferenceKernels.rope(v, heads: heads, headDim: hd, nRot: hd, pos: pos, base: Self.ropeBase)
        }
        let embd = values("token_embd.weight")
        var x: [[Float]] = tokens.map { Array(embd[Int($0) * d..<(Int($0) + 1) * d]) }
        for l in 0..<layerTypes.count {
            let p = "blk.\(l)."
            var keys: [[Float]] = []
            var vals: [[Float]] = []
            var attnOut: [[Float]] = []
            for (t, xt) in x.enumerated() {
                let xn = ReferenceKernels.rmsNorm(xt, weight: values(p + "attn_norm.weight"), eps: Self.eps)
                let q = rope(matvec(p + "attn_q.weight", xn), heads: Self.heads, pos: t)
                keys.append(rope(matvec(p + "attn_k.weight", xn), heads: Self.kvHeads, pos: t))
                vals.append(matvec(p + "attn_v.weight", xn))
                var out: [Float] = []
                for h in 0..<Self.heads {
                    let g = h / (Self.heads / Self.kvHeads)
                    let qh = Array(q[h * hd..<(h + 1) * hd])
                    let slice = { (v: [Float]) in Array(v[g * hd..<(g + 1) * hd]) }
                    let scores = keys.map { ReferenceKernels.dot(qh, slice($0)) / Float(hd).squareRoot() }
                    let weights = ReferenceKernels.softmax(scores)
                    var o = [Float](repeating: 0, count: hd)
                    for (j, v) in vals.enumerated() {
                        let vh = slice(v)
                        for i in 0..<hd { o[i] += weights[j] * vh[i] }
                    }
                    out += o
                }
                attnOut.append(out)
            }
            for t in x.indices {
                let o = matvec(p + "attn_output.weight", attnOut[t])
                for i in 0..<d { x[t][i] += o[i] }
                let xn = ReferenceKernels.rmsNorm(x[t], weight: values(p + "ffn_norm.weight"), eps: Self.eps)
                let g = matvec(p + "ffn_gate.weight", xn)
                let u = matvec(p + "ffn_up.weight", xn)
                let a = (0..<Self.ffn).map { ReferenceKernels.silu(g[$0]) * u[$0] }
                let down = matvec(p + "ffn_down.weight", a)
                for i in 0..<d { x[t][i] += down[i] }
            }
        }
        let last = ReferenceKernels.rmsNorm(x[x.count - 1], weight: values("output_norm.weight"), eps: Self.eps)
        return matvec("token_embd.weight", last)
    }
}

@Suite
struct ModelWeightTypesTests {
    static let tokens: [Int32] = [3, 17, 60, 0, 42, 42, 7, 33, 15]

    func forward(_ model: LlamaModel, _ tokens: [Int32], _ cache: KVCache) throws -> [Float] {
        var logits = [Float](repeating: .nan, count: model.config.vocabularySize)
        try logits.withUnsafeMutableBufferPointer { try model.forward(tokens: tokens, cache: cache, logits: $0) }
        return logits
    }

    /// Every weight type in one file: token by token and as one batch, on 1 and 2 threads,
    /// against the plain float forward pass of the decoded weights.
    @Test(arguments: [GGMLType.q6_K, .q4_K, .q5_0, .bf16])
    func forwardMatchesPlainReference(embedding: GGMLType) throws {
        let tiny = WideTinyModel(embedding: embedding)
        let path = try tiny.write()
        for threads in [1, 2] {
            let model = try LlamaModel(gguf: try GGUFFile(path: path), threads: threads)
            let cache = model.makeCache(capacity: 32)
            for n in 1...Self.tokens.count {
                let got = try forward(model, [Self.tokens[n - 1]], cache)
                let err = relativeMaxError(got, tiny.referenceLogits(Array(Self.tokens.prefix(n))))
                #expect(err < 0.03, "embedding \(embedding), threads \(threads), \(n) tokens: relative error \(err)")
            }
            let got = try forward(model, Self.tokens, model.makeCache(capacity: 32))
            let err = relativeMaxError(got, tiny.referenceLogits(Self.tokens))
            if threads == 1 { print("wide tiny model (embedding \(embedding)) vs plain reference: \(err)") }
            #expect(err < 0.03, "embedding \(embedding), threads \(threads), batch: relative error \(err)")
        }
    }

    /// Q4_K rows of 320 values do not fill super-blocks: the file is refused with a typed error
    /// naming the tensor, not read past its end.
    @Test func kQuantOfPartialSuperBlockIsRefused() throws {
        let tiny = WideTinyModel()
        let name = "blk.0.attn_q.weight"
        let path = try tiny.write(replacing: [
            name: (shape: [320, 256], type: .q4_K, data: [UInt8](repeating: 0, count: 2 * 144 * 256))
        ])
        #expect {
            _ = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1)
        } throws: { error in
            "\(error)".contains(name)
        }
    }
}
