import CKernels

/// The mixture-of-experts feed-forward of a pass, in pipeline order: router, top-k, the experts'
/// products grouped by expert, the weighted sum.
extension LlamaModel {
    /// The experts' outputs for the rows of `segments` ([n × width] normed inputs in `xn`), summed
    /// with their weights into `out` ([n × width]).
    ///
    /// As llama.cpp's MUL_MAT_ID: each expert's rows (the tokens that chose it) go through its
    /// three products together, read once for all of them; a decoding token reads only its
    /// `used` experts. A product's arithmetic is per row, but for the K-quants llama.cpp takes its
    /// tiled kernel for an expert that 8 or more rows of the micro-batch chose (and its per-row
    /// kernel below): here, 8 or more rows of the same segment (a prompt's piece, so exact for
    /// prompts of up to `maxBatch` tokens; past that llama.cpp counts over its whole micro-batch
    /// of up to 512). `logitRowsOnly`: the last layer, where llama.cpp runs only the rows whose
    /// logits are read (each alone in its expert's product); the other rows of `out` are zero.
    func expertFeedForward(
        _ ffn: ExpertFeedForward, _ segments: UnsafeBufferPointer<Segment>, rows n: Int, orders: UnsafePointer<UInt8>,
        logitRowsOnly: Bool, into out: UnsafeMutablePointer<Float>
    ) {
        guard let s = expertScratch else { preconditionFailure("a model with experts has their scratch") }
        let dim = config.embeddingLength
        let width = config.feedForwardLength
        let k = ffn.used
        let count = ffn.count
        // Rows taking part, compacted: every row, or each segment's last row that wants logits.
        var m = 0
        for (index, segment) in segments.enumerated() where !segment.tokens.isEmpty {
            if logitRowsOnly {
                guard segment.logits != nil else { continue }
                s.rows[m] = segment.row + segment.tokens.count - 1
                s.segments[m] = index
                s.rowOrders[m] = 0
                m += 1
            } else {
                for t in 0..<segment.tokens.count {
                    s.rows[m] = segment.row + t
                    s.segments[m] = index
                    s.rowOrders[m] = orders[segment.row + t]
                    m += 1
                }
            }
        }
        if logitRowsOnly { out.update(repeating: 0, count: n * dim) }
        guard m > 0 else { return }
        let input: UnsafeMutablePointer<Float>
        if m == n {
            input = xn
        } else {
            for i in 0..<m { (s.input + i * dim).update(from: xn + s.rows[i] * dim, count: dim) }
            input = s.input
        }

        // Router: [m × dim] → logits [m × count] → each row's `k` experts and weights.
        var routerActivations = PreparedActivations(
            source: input, n: m, columns: dim, orders: UnsafePointer(s.rowOrders))
        matmul(ffn.router, &routerActivations, into: s.logits, ldy: count)
        if let biases = ffn.biases { addBias(biases.router, to: s.logits, n: m, width: count) }
        ck_moe_route(
            s.logits, Int32(m), Int32(count), Int32(k), ffn.gating.kernelGating, ffn.gating.normalizesChosen ? 1 : 0,
            s.probabilities, s.ids, s.weights)

        // Slots (row i's j-th choice, a = i·k + j) grouped by expert, each group in row order.
        s.counts.update(repeating: 0, count: count)
        for a in 0..<m * k { s.counts[Int(s.ids[a])] += 1 }
        var start = 0
        for e in 0..<count {
            s.starts[e] = start
            start += s.counts[e]
        }
        for a in 0..<m * k {
            let e = Int(s.ids[a])
            s.slots[s.starts[e]] = a
            s.starts[e] += 1
        }
        for e in 0..<count { s.starts[e] -= s.counts[e] }

        // Each chosen expert over its rows, all experts' products of a kind in as few pool tasks
        // as the kernels take (eight): every slot's input row gathered in expert order and
        // quantized once, gate and up, the activation over every slot, down; each slot's result
        // back in its place. A row's arithmetic is its expert's product's, whatever shares a task.
        let slotCount = m * k
        for p in 0..<slotCount { (s.gathered + p * dim).update(from: input + s.slots[p] / k * dim, count: dim) }
        for e in 0..<count where s.counts[e] > 0 {
            markExpertOrders(
                s, list: s.slots + s.starts[e], rows: s.counts[e], used: k, segments: segments,
                into: s.expertOrders + s.starts[e], logitRowsOnly: logitRowsOnly)
        }
        let gateInput = expertActivations(
            ffn.gate[0].type, s.gathered, rows: slotCount, columns: dim, into: s.quantizedA)
        let upInput =
            ffn.up[0].type.productInputForm == ffn.gate[0].type.productInputForm
            ? gateInput
            : expertActivations(ffn.up[0].type, s.gathered, rows: slotCount, columns: dim, into: s.quantizedB)
        expertProducts(s, counts: count, products: 2) { e, which, rows, offset in
            let (w, x, out) = which == 0 ? (ffn.gate[e], gateInput, s.gate) : (ffn.up[e], upInput, s.up)
            return Self.productArguments(
                w, x: x.pointer + offset * x.rowBytes, xRowBytes: x.rowBytes, rows: rows, y: out + offset * width,
                ldy: width, orders: s.expertOrders + offset)
        }
        if let biases = ffn.biases {
            for e in 0..<count where s.counts[e] > 0 {
                addBias(biases.gate[e], to: s.gate + s.starts[e] * width, n: s.counts[e], width: width)
                addBias(biases.up[e], to: s.up + s.starts[e] * width, n: s.counts[e], width: width)
            }
        }
        let activation = config.architecture.activation.kernelKind
        ck_rows_glu(pool.raw, activation, s.gate, s.up, s.act, Int32(slotCount), Int32(width))
        let downInput = expertActivations(
            ffn.down[0].type, s.act, rows: slotCount, columns: width, into: s.quantizedA)
        expertProducts(s, counts: count, products: 1) { e, _, rows, offset in
            Self.productArguments(
                ffn.down[e], x: downInput.pointer + offset * downInput.rowBytes, xRowBytes: downInput.rowBytes,
                rows: rows, y: s.expertDown + offset * dim, ldy: dim, orders: s.expertOrders + offset)
        }
        if let biases = ffn.biases {
            for e in 0..<count where s.counts[e] > 0 {
                addBias(biases.down[e], to: s.expertDown + s.starts[e] * dim, n: s.counts[e], width: dim)
            }
        }
        for p in 0..<slotCount { (s.slotOutputs + s.slots[p] * dim).update(from: s.expertDown + p * dim, count: dim) }

        // The weighted sum in choice order (most probable first), into each row.
        if m == n {
            ck_moe_combine(s.slotOutputs, s.weights, Int32(m), Int32(k), Int32(dim), out)
        } else {
            ck_moe_combine(s.slotOutputs, s.weights, Int32(m), Int32(k), Int32(dim), s.combined)
            for i in 0..<m { (out + s.rows[i] * dim).update(from: s.combined + i * dim, count: dim) }
        }
    }

    /// CK_ORDER_* flags of one expert's `rows` slots (in row order), into `flags`: TILED where 8
    /// or more rows of the same segment chose this expert and that segment's micro-batch has 8 or
    /// more rows (llama.cpp's per-expert floor for its tiled K-quant product), else 0 (its
    /// per-row kernel; never the four-row groups nor the float types' GEMM, which its MUL_MAT_ID
    /// does not take).
    private func markExpertOrders(
        _ s: ExpertScratch, list: UnsafePointer<Int>, rows c: Int, used k: Int,
        segments: UnsafeBufferPointer<Segment>, into flags: UnsafeMutablePointer<UInt8>, logitRowsOnly: Bool
    ) {
        var r = 0
        while r < c {
            let segment = s.segments[list[r] / k]
            var end = r + 1
            while end < c && s.segments[list[end] / k] == segment { end += 1 }
            let tiled = !logitRowsOnly && segments[segment].microBatch >= 8 && end - r >= 8
            (flags + r).update(repeating: tiled ? UInt8(CK_ORDER_TILED) : 0, count: end - r)
            r = end
        }
    }

    /// `rows` f32 rows of `columns` in the form `type`'s products read (`GGMLType.activationForm`;
    /// F16 and BF16 weights: rounded to that type, as `arguments` does), quantized into `buffer` over the pool,
    /// or the rows themselves for F32 weights.
    private func expertActivations(
        _ type: GGMLType, _ source: UnsafeMutablePointer<Float>, rows: Int, columns: Int,
        into buffer: UnsafeMutableRawPointer
    ) -> (pointer: UnsafeRawPointer, rowBytes: Int) {
        let form = type.productInputForm
        guard form != .f32 else { return (UnsafeRawPointer(source), columns * MemoryLayout<Float>.stride) }
        let rowBytes = form.roundsActivations ? columns * MemoryLayout<Float>.stride : form.rowBytes(elements: columns)!
        let status = ck_rows_quantize(
            pool.raw, Int32(form.rawValue), source, Int32(columns), buffer, rowBytes, Int32(rows))
        precondition(status == 0, "\(form) is not an activation form")
        return (UnsafeRawPointer(buffer), rowBytes)
    }

    /// The products of every chosen expert (`products` per expert: `make(e, which, rows, first
    /// slot)`), eight to a pool task.
    private func expertProducts(
        _ s: ExpertScratch, counts count: Int, products: Int,
        _ make: (_ expert: Int, _ which: Int, _ rows: Int, _ offset: Int) -> ck_matmul_args
    ) {
        var pending = 0
        for e in 0..<count where s.counts[e] > 0 {
            for which in 0..<products {
                s.arguments[pending] = make(e, which, s.counts[e], s.starts[e])
                pending += 1
                if pending == ExpertScratch.argumentsPerTask {
                    ck_matmul_many(pool.raw, s.arguments, Int32(pending))
                    pending = 0
                }
            }
        }
        if pending > 0 { ck_matmul_many(pool.raw, s.arguments, Int32(pending)) }
    }

    /// The kernel's arguments for `w` over `rows` activation rows already in its form.
    static func productArguments(
        _ w: WeightMatrix, x: UnsafeRawPointer, xRowBytes: Int, rows: Int, y: UnsafeMutablePointer<Float>, ldy: Int,
        orders: UnsafePointer<UInt8>
    ) -> ck_matmul_args {
        ck_matmul_args(
            type: w.productType, w: w.productData, w_row_bytes: w.productStride, rows: Int32(w.rows),
            k: Int32(w.columns), x: x, x_row_bytes: xRowBytes, n: Int32(rows), y: y, ldy: Int32(ldy), orders: orders)
    }
}
