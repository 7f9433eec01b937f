import CKernels
import Foundation

/// The forward pass itself, in pipeline order: embedding, then per layer attention and feed-forward,
/// then the output norm and head.
extension LlamaModel {
    /// One pass over the rows of `segments` (together at most `maxPassTokens` rows, each segment
    /// starting at its `row`). Weight products run once over all rows; RoPE positions, the KV
    /// cache and attention are per segment.
    /// `scoring`: the one segment is a scored prompt, every row's logits go there
    /// ([rows × vocabulary]). (Not a field of `Segment`: a batched pass keeps 16 of those on the
    /// stack within 1 KiB, and a pointer more would put them on the heap every decode round.)
    func runChunk(_ segments: UnsafeBufferPointer<Segment>, scoring: UnsafeMutablePointer<Float>? = nil) {
        let n = segments.last.map { $0.row + $0.tokens.count } ?? 0
        // Which of llama.cpp's arithmetics each row's products follow (its micro-batch's), and
        // rows alone (the last layer's feed-forward, which llama.cpp runs on the output rows only).
        for segment in segments {
            for t in 0..<segment.tokens.count { rowOrders[segment.row + t] = segment.rowOrder(t) }
        }
        (rowOrders + n).update(repeating: 0, count: n)
        // The last layer's feed-forward: the rows wanting logits alone; the others, whose results
        // nothing reads, in their micro-batch's order, so they take the prompt kernels and not
        // the one-row ones (9 % of a Q5_K_M prompt's time went there).
        let lastFFN = rowOrders + 2 * n
        lastFFN.update(from: rowOrders, count: n)
        for segment in segments where segment.logits != nil && !segment.tokens.isEmpty {
            lastFFN[segment.row + segment.tokens.count - 1] = 0
        }
        runChunk(segments, rows: n, orders: UnsafePointer(rowOrders), scoring: segments.count == 1 ? scoring : nil)
    }

    private func runChunk(
        _ segments: UnsafeBufferPointer<Segment>, rows n: Int, orders: UnsafePointer<UInt8>,
        scoring scored: UnsafeMutablePointer<Float>?
    ) {
        let c = config
        let arch = c.architecture
        let dim = c.embeddingLength
        let qDim = c.queryDim
        let kvDim = c.kvDim
        let ffn = c.feedForwardLength
        let alone = orders + n
        let lastFFN = orders + 2 * n
        // A scored prompt (one segment wanting every row's logits) runs its last feed-forward and
        // the head over all rows in its micro-batch's arithmetic, as llama.cpp does when every
        // token is an output (it then skips the output-rows-only cut).
        // Shape of x, xn, proj: [n × dim]; q, attn: [n × qDim]; k, v: [n × kvDim].
        for segment in segments {
            for (t, id) in segment.tokens.enumerated() {
                tokenEmbedding.dequantizeRow(Int(id), into: x + (segment.row + t) * dim)
            }
        }
        if arch.scalesEmbeddings { ck_scale(x, Float(dim).squareRoot(), Int32(n * dim)) }
        dumpTensor("inp_scaled", x, count: n * dim)
        for (l, layer) in layers.enumerated() {
            // Attention block
            rmsNorm(x, layer.attentionNorm, into: xn, n: n, width: dim)
            dumpTensor("attn_norm-\(l)", xn, count: n * dim)
            var activations = PreparedActivations(source: xn, n: n, columns: dim, orders: orders)
            matmul(
                Product(weights: layer.wq, out: q, ldy: qDim), Product(weights: layer.wk, out: k, ldy: kvDim),
                Product(weights: layer.wv, out: v, ldy: kvDim), activations: &activations)
            addBias(layer.qBias, to: q, n: n, width: qDim)
            addBias(layer.kBias, to: k, n: n, width: kvDim)
            addBias(layer.vBias, to: v, n: n, width: kvDim)
            dumpTensor("Qcur-\(l)", q, count: n * qDim)
            dumpTensor("Kcur-\(l)", k, count: n * kvDim)
            dumpTensor("Vcur-\(l)", v, count: n * kvDim)
            if let qNorm = layer.qNorm { rmsNorm(q, qNorm, into: q, n: n * c.headCount, width: c.headDim) }
            if let kNorm = layer.kNorm { rmsNorm(k, kNorm, into: k, n: n * c.headCountKV, width: c.headDim) }
            dumpTensor("Qcur_normed-\(l)", q, count: n * qDim)
            dumpTensor("Kcur_normed-\(l)", k, count: n * kvDim)
            // RoPE and the new keys and values into each sequence's cache, then every sequence's
            // attention in one pool task (with the layer's sink logits, where it has them).
            let sinkValues = layer.sinks ?? []
            sinkValues.withUnsafeBufferPointer { sinkBuffer in
                let sinks = layer.sinks == nil ? nil : sinkBuffer.baseAddress
                withUnsafeTemporaryAllocation(of: ck_attention_args.self, capacity: segments.count) { list in
                    for (i, segment) in segments.enumerated() {
                        let offset = segment.row
                        let kCache = segment.cache.keys(layer: l)
                        let vCache = segment.cache.values(layer: l)
                        let pos0 = segment.cache.count
                        let rows = segment.tokens.count
                        ropeAndCache(
                            q: q + offset * qDim, k: k + offset * kvDim, v: v + offset * kvDim, rows: rows,
                            position: pos0, base: layer.ropeBase, rotates: arch.usesRope(layer: l), keys: kCache,
                            values: vCache)
                        list.initializeElement(
                            at: i,
                            to: ck_attention_args(
                                q: q + offset * qDim, q_stride: Int32(qDim), k_cache: kCache, v_cache: vCache,
                                kv_stride: Int32(kvDim), n_head: Int32(c.headCount), n_kv_head: Int32(c.headCountKV),
                                head_dim: Int32(c.headDim), n_tokens: Int32(rows), pos0: Int32(pos0),
                                scale: arch.scalesQueryBeforeAttention ? 1 : c.attentionScale,
                                out: attn + offset * qDim, out_stride: Int32(qDim),
                                scratch: attnScratch, scratch_stride: Int32(attnScratchStride),
                                window: Int32(layer.window),
                                call_rows: Int32(segment.microBatch), sinks: sinks)
                        )
                    }
                    if let stage = kvStage {
                        attendQuantized(list, segments, stage: stage)
                        return
                    }
                    // Architectures whose references ran llama.cpp's flash attention get its
                    // arithmetic, as its micro-batch picks it: tiles from 64 rows; a lone row over a
                    // KV view of 512+ cells split over its threads (here ours); else row by row.
                    var rest = 0
                    for i in 0..<segments.count {
                        if attendFlash(list[i], microBatch: segments[i].microBatch) { continue }
                        list.swapAt(rest, i)
                        rest += 1
                    }
                    if rest > 0 { ck_attention_many(pool.raw, list.baseAddress!, Int32(rest)) }
                }
            }
            var attnActivations = PreparedActivations(source: attn, n: n, columns: qDim, orders: orders)
            dumpTensor("Qcur-\(l)#2", q, count: n * qDim)
            dumpTensor("Kcur-\(l)#2", k, count: n * kvDim)
            dumpTensor("kqv_out-\(l)", attn, count: n * qDim)
            matmul(layer.wo, &attnActivations, into: proj, ldy: dim)
            addBias(layer.oBias, to: proj, n: n, width: dim)
            if let norm = layer.postAttentionNorm { rmsNorm(proj, norm, into: proj, n: n, width: dim) }
            dumpTensor("attn_post_norm-\(l)", proj, count: n * dim)
            ck_rows_add(pool.raw, x, proj, Int32(n), Int32(dim))

            // Feed-forward block
            rmsNorm(x, layer.ffnNorm, into: xn, n: n, width: dim)
            dumpTensor("sa_out-\(l)", x, count: n * dim)
            dumpTensor("ffn_norm-\(l)", xn, count: n * dim)
            let lastLayer = l == layers.count - 1 && scored == nil
            switch layer.feedForward {
            case .dense(let gate, let up, let down):
                let ffnOrders = lastLayer ? lastFFN : orders
                var ffnActivations = PreparedActivations(source: xn, n: n, columns: dim, orders: ffnOrders)
                matmul(
                    Product(weights: gate, out: gateOut, ldy: ffn), Product(weights: up, out: upOut, ldy: ffn),
                    activations: &ffnActivations)
                ck_rows_glu(pool.raw, arch.activation.kernelKind, gateOut, upOut, act, Int32(n), Int32(ffn))
                dumpTensor("ffn_gate-\(l)", gateOut, count: n * ffn)
                dumpTensor("ffn_up-\(l)", upOut, count: n * ffn)
                dumpTensor("\(arch.activation.tensorName)-\(l)", act, count: n * ffn)
                var downActivations = PreparedActivations(source: act, n: n, columns: ffn, orders: ffnOrders)
                matmul(down, &downActivations, into: proj, ldy: dim)
                dumpTensor("ffn_out-\(l)", proj, count: n * dim)
            case .experts(let experts):
                expertFeedForward(experts, segments, rows: n, orders: orders, logitRowsOnly: lastLayer, into: proj)
                dumpTensor("ffn_moe_out-\(l)", proj, count: n * dim)
            }
            if let norm = layer.postFFNNorm { rmsNorm(proj, norm, into: proj, n: n, width: dim) }
            dumpTensor("ffn_post_norm-\(l)", proj, count: n * dim)
            ck_rows_add(pool.raw, x, proj, Int32(n), Int32(dim))
            dumpTensor("l_out-\(l)", x, count: n * dim)
        }
        if let scored {
            // Output head over every row: [n × dim] → [n × vocabulary].
            rmsNorm(x, outputNorm, into: xn, n: n, width: dim)
            dumpTensor("result_norm", xn, count: n * dim)
            var outActivations = PreparedActivations(source: xn, n: n, columns: dim, orders: orders)
            matmul(output, &outActivations, into: scored, ldy: c.vocabularySize)
            dumpTensor("result_output", scored, count: n * c.vocabularySize)
            return
        }
        // Output head over the last row of each segment that wants logits, in one product.
        var wanting = 0
        var only: UnsafeMutablePointer<Float>? = nil
        for segment in segments {
            guard let logits = segment.logits else { continue }
            let last = x + (segment.row + segment.tokens.count - 1) * dim
            ck_rmsnorm(last, outputNorm, xn + wanting * dim, Int32(dim), c.rmsNormEpsilon)
            wanting += 1
            only = logits
        }
        guard wanting > 0, let only else { return }
        dumpTensor("result_norm", xn, count: wanting * dim)
        var outActivations = PreparedActivations(source: xn, n: wanting, columns: dim, orders: alone)
        if wanting == 1 {
            matmul(output, &outActivations, into: only, ldy: c.vocabularySize)
            dumpTensor("result_output", only, count: c.vocabularySize)
            return
        }
        matmul(output, &outActivations, into: batchLogits, ldy: c.vocabularySize)
        var i = 0
        for segment in segments {
            guard let logits = segment.logits else { continue }
            logits.update(from: batchLogits + i * c.vocabularySize, count: c.vocabularySize)
            i += 1
        }
    }

    /// Runs `a` with the arithmetic of llama.cpp's flash attention when the architecture's
    /// references used it; false when `a` is left for the other kernels.
    private func attendFlash(_ a: ck_attention_args, microBatch: Int) -> Bool {
        guard config.architecture.flashAttentionRows && a.head_dim <= 256 else { return false }
        if microBatch == 1 && a.n_tokens > 1 {
            // Decode steps verified together: each row as its own decode step.
            for t in 0..<Int(a.n_tokens) { _ = attendFlash(a.row(t), microBatch: 1) }
        } else if microBatch >= Self.flashAttentionTileRows {
            withUnsafePointer(to: a) { ck_attention_flash_tiled(pool.raw, $0) }
        } else if microBatch == 1 && a.pos0 + 1 > 256 {
            withUnsafePointer(to: a) { ck_attention_flash_split($0, Int32(threads)) }
        } else {
            withUnsafePointer(to: a) { ck_attention_flash_rows($0) }
        }
        return true
    }

    /// Attention over q8_0 caches. Decoding rows read the blocks directly (attention_q8.c), all
    /// sequences in one pool task. A prompt chunk reads every key once per tile of tokens, so
    /// its sequence's keys and values are first widened to f16 (d × q rounded once) and the f16
    /// kernels run on them: converting each row once costs less than reading blocks per token.
    private func attendQuantized(
        _ list: UnsafeMutableBufferPointer<ck_attention_args>, _ segments: UnsafeBufferPointer<Segment>,
        stage: (keys: UnsafeMutablePointer<UInt16>, values: UnsafeMutablePointer<UInt16>)
    ) {
        var lone = 0
        for i in 0..<segments.count {
            var a = list[i]
            if a.call_rows == 1 && a.n_tokens > 1 {
                // Decode steps verified together: each row as its own decode step.
                for t in 0..<Int(a.n_tokens) {
                    var row = a.row(t)
                    ck_attention_q8_0_many(pool.raw, &row, 1)
                }
                continue
            }
            // A lone row of a longer call (a prompt's last piece) takes the batch's kernels too.
            guard a.n_tokens > 1 || a.call_rows > 1 else {
                list.swapAt(lone, i)
                lone += 1
                continue
            }
            let rows = a.pos0 + a.n_tokens
            ck_kv_q8_0_to_f16(a.k_cache, stage.keys, rows, a.kv_stride)
            ck_kv_q8_0_to_f16(a.v_cache, stage.values, rows, a.kv_stride)
            a.k_cache = UnsafePointer(stage.keys)
            a.v_cache = UnsafePointer(stage.values)
            if !attendFlash(a, microBatch: segments[i].microBatch) {
                withUnsafePointer(to: a) { ck_attention(pool.raw, $0) }
            }
        }
        if lone > 0 { ck_attention_q8_0_many(pool.raw, list.baseAddress!, Int32(lone)) }
    }

    /// RoPE on the query and key heads of `rows` new rows of one sequence (row t at `position` +
    /// t), in the architecture's pairing with the model's frequency factors and scaling (linear,
    /// YaRN, LongRoPE's factor; none on a layer that does not `rotate`), the query then multiplied
    /// by the attention temperature or scale where the family does so, then their keys and values
    /// into the cache's rows from `position` (f16, or q8_0 blocks with a q8_0 cache). Over the pool.
    func ropeAndCache(
        q: UnsafeMutablePointer<Float>, k: UnsafeMutablePointer<Float>, v: UnsafePointer<Float>, rows: Int,
        position: Int, base: Float, rotates: Bool = true, keys: UnsafeMutablePointer<UInt16>,
        values: UnsafeMutablePointer<UInt16>
    ) {
        let c = config
        let scaling = c.ropeScaling
        let yarn = scaling.kernelArguments
        func run(_ factors: UnsafePointer<Float>?, _ queryScales: UnsafePointer<Float>?) {
            withUnsafePointer(to: yarn) { yarn in
                var args = ck_rope_kv_args(
                    q: q, q_stride: Int32(c.queryDim), n_head: Int32(c.headCount), k: k, v: v,
                    kv_stride: Int32(c.kvDim),
                    n_kv_head: Int32(c.headCountKV), head_dim: Int32(c.headDim),
                    n_rot: rotates ? Int32(c.ropeDimensionCount) : 0, pos0: Int32(position), n_tokens: Int32(rows),
                    base: base, freq_scale: c.ropeFreqScale, freq_factors: factors,
                    halves: c.architecture.ropeStyle == .halves ? 1 : 0, k_cache: keys, v_cache: values,
                    yarn: yarn, q_scale: queryScales)
                if kvCacheType == .q8_0 {
                    ck_rows_rope_kv_q8_0(pool.raw, &args)
                } else {
                    ck_rows_rope_kv(pool.raw, &args)
                }
            }
        }
        func withFactors(_ queryScales: UnsafePointer<Float>?) {
            if let factors = ropeFrequencyFactors {
                factors.withUnsafeBufferPointer { run($0.baseAddress, queryScales) }
            } else {
                run(nil, queryScales)
            }
        }
        let temperature = scaling.temperatureScale != 0
        guard temperature || c.architecture.scalesQueryBeforeAttention else { return withFactors(nil) }
        // One factor per row (on the stack: at most a pass's rows).
        withUnsafeTemporaryAllocation(of: Float.self, capacity: rows) { scales in
            for t in 0..<rows {
                scales[t] = temperature ? scaling.temperature(at: position + t) : c.attentionScale
            }
            withFactors(UnsafePointer(scales.baseAddress))
        }
    }

    /// Adds `bias` (width floats) to each of the n rows, when there is one.
    func addBias(_ bias: [Float]?, to rows: UnsafeMutablePointer<Float>, n: Int, width: Int) {
        guard let bias else { return }
        bias.withUnsafeBufferPointer { b in
            for t in 0..<n { ck_add(rows + t * width, b.baseAddress!, Int32(width)) }
        }
    }

    func rmsNorm(
        _ input: UnsafeMutablePointer<Float>, _ weight: [Float], into out: UnsafeMutablePointer<Float>, n: Int,
        width: Int
    ) {
        weight.withUnsafeBufferPointer { w in
            ck_rows_rmsnorm(pool.raw, input, w.baseAddress!, out, Int32(n), Int32(width), config.rmsNormEpsilon)
        }
    }

    /// Activations in the form each weight type wants, quantized at most once per form.
    struct PreparedActivations {
        let source: UnsafeMutablePointer<Float>
        let n: Int
        let columns: Int
        /// Per row, CK_ORDER_* flags (ck_matmul_args.orders); nil: the kernels' default.
        var orders: UnsafePointer<UInt8>? = nil
        var form: GGMLType? = nil
    }

    func matmul(
        _ w: WeightMatrix, _ a: inout PreparedActivations, into y: UnsafeMutablePointer<Float>, ldy: Int
    ) {
        var args = arguments(w, &a, into: y, ldy: ldy)
        ck_matmul(pool.raw, &args)
    }

    /// One product of a layer: weights, output rows, the output's row stride.
    struct Product {
        let weights: WeightMatrix
        let out: UnsafeMutablePointer<Float>
        let ldy: Int
    }

    /// Query, key and value (or any three products of the same activations) in one pool task.
    /// Not variadic: a variadic list is an array, made anew every call, in every layer.
    func matmul(_ a: Product, _ b: Product, _ c: Product, activations: inout PreparedActivations) {
        withUnsafeTemporaryAllocation(of: Product.self, capacity: 3) { list in
            list.initializeElement(at: 0, to: a)
            list.initializeElement(at: 1, to: b)
            list.initializeElement(at: 2, to: c)
            matmul(UnsafeBufferPointer(list), activations: &activations)
            _ = list.deinitialize()
        }
    }

    /// Gate and up (or any two products of the same activations) in one pool task.
    func matmul(_ a: Product, _ b: Product, activations: inout PreparedActivations) {
        withUnsafeTemporaryAllocation(of: Product.self, capacity: 2) { list in
            list.initializeElement(at: 0, to: a)
            list.initializeElement(at: 1, to: b)
            matmul(UnsafeBufferPointer(list), activations: &activations)
            _ = list.deinitialize()
        }
    }

    /// Several products of the same activations in one pool task (one wait instead of several).
    /// The activations have one quantized buffer, so matrices wanting different activation forms
    /// run one after the other (Gemma's Q5_0 and Q8_0 projections share Q8_0 and run together).
    func matmul(_ products: UnsafeBufferPointer<Product>, activations a: inout PreparedActivations) {
        guard products.allSatisfy({ $0.weights.type.activationForm == products[0].weights.type.activationForm }) else {
            for p in products { matmul(p.weights, &a, into: p.out, ldy: p.ldy) }
            return
        }
        withUnsafeTemporaryAllocation(of: ck_matmul_args.self, capacity: products.count) { list in
            for (i, p) in products.enumerated() {
                list.initializeElement(at: i, to: arguments(p.weights, &a, into: p.out, ldy: p.ldy))
            }
            ck_matmul_many(pool.raw, list.baseAddress!, Int32(products.count))
        }
    }

    /// Quantizes the `n` rows of `a` into `quantized` in `form` (Q8_0, Q8_1 or Q8_K; F16, BF16:
    /// f32 rounded to that precision, for F16 and BF16 weights), unless an
    /// earlier product of this pass already left them there in that form (the products that
    /// share an input).
    func quantize(_ a: inout PreparedActivations, as form: GGMLType, rowBytes: Int) {
        guard a.form != form else { return }
        let status = ck_rows_quantize(
            pool.raw, Int32(form.rawValue), a.source, Int32(a.columns), quantized, rowBytes, Int32(a.n))
        precondition(status == 0, "\(form) is not an activation form")
        a.form = form
    }

    /// The kernel's arguments for `w × a`, quantizing `a` into the form `w` wants if needed
    /// (`GGMLType.activationForm`).
    func arguments(
        _ w: WeightMatrix, _ a: inout PreparedActivations, into y: UnsafeMutablePointer<Float>, ldy: Int
    ) -> ck_matmul_args {
        let xPointer: UnsafeRawPointer
        let xRowBytes: Int
        // WeightMatrix only takes types with a form, in rows of whole blocks: the activation row
        // (as wide as a weight row) fills whole blocks of its form too.
        let form = w.type.productInputForm
        if form.roundsActivations {
            // llama.cpp rounds F16 and BF16 products' activations to that type (its vec_dot_type)
            // first: once per pass here, into the scratch (marked with the form), not once per
            // weight row.
            xRowBytes = a.columns * MemoryLayout<Float>.stride
            quantize(&a, as: form, rowBytes: xRowBytes)
            xPointer = UnsafeRawPointer(quantized)
        } else if form != .f32 {
            xRowBytes = form.rowBytes(elements: a.columns)!
            quantize(&a, as: form, rowBytes: xRowBytes)
            xPointer = UnsafeRawPointer(quantized)
        } else {
            xRowBytes = a.columns * MemoryLayout<Float>.stride
            xPointer = UnsafeRawPointer(a.source)
        }
        return ck_matmul_args(
            type: w.productType, w: w.productData, w_row_bytes: w.productStride, rows: Int32(w.rows),
            k: Int32(w.columns), x: xPointer, x_row_bytes: xRowBytes, n: Int32(a.n), y: y, ldy: Int32(ldy),
            orders: a.orders)
    }
}

extension ck_attention_args {
    /// Row `t` of these rows alone: its query, its output, its position.
    func row(_ t: Int) -> ck_attention_args {
        var r = self
        r.q = q.map { $0 + t * Int(q_stride) }
        r.out = out.map { $0 + t * Int(out_stride) }
        r.pos0 = pos0 + Int32(t)
        r.n_tokens = 1
        return r
    }
}
