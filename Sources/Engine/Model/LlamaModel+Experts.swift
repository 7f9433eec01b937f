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

        // Each chosen expert over its rows: gate and up, the activation, down; every row's
        // result to its slot.
        let activation = config.architecture.activation.kernelKind
        for e in 0..<count where s.counts[e] > 0 {
            let c = s.counts[e]
            let list = s.slots + s.starts[e]
            for r in 0..<c { (s.gathered + r * dim).update(from: input + list[r] / k * dim, count: dim) }
            markExpertOrders(s, list: list, rows: c, used: k, segments: segments, logitRowsOnly: logitRowsOnly)
            var activations = PreparedActivations(
                source: s.gathered, n: c, columns: dim, orders: UnsafePointer(s.expertOrders))
            matmul(
                Product(weights: ffn.gate[e], out: gateOut, ldy: width),
                Product(weights: ffn.up[e], out: upOut, ldy: width),
                activations: &activations)
            if let biases = ffn.biases {
                addBias(biases.gate[e], to: gateOut, n: c, width: width)
                addBias(biases.up[e], to: upOut, n: c, width: width)
            }
            ck_rows_glu(pool.raw, activation, gateOut, upOut, act, Int32(c), Int32(width))
            var downActivations = PreparedActivations(
                source: act, n: c, columns: width, orders: UnsafePointer(s.expertOrders))
            matmul(ffn.down[e], &downActivations, into: s.expertDown, ldy: dim)
            if let biases = ffn.biases { addBias(biases.down[e], to: s.expertDown, n: c, width: dim) }
            for r in 0..<c { (s.slotOutputs + list[r] * dim).update(from: s.expertDown + r * dim, count: dim) }
        }

        // The weighted sum in choice order (most probable first), into each row.
        if m == n {
            ck_moe_combine(s.slotOutputs, s.weights, Int32(m), Int32(k), Int32(dim), out)
        } else {
            ck_moe_combine(s.slotOutputs, s.weights, Int32(m), Int32(k), Int32(dim), s.combined)
            for i in 0..<m { (out + s.rows[i] * dim).update(from: s.combined + i * dim, count: dim) }
        }
    }

    /// CK_ORDER_* flags of one expert's `rows` slots (in row order): TILED where 8 or more rows of
    /// the same segment chose this expert and that segment's micro-batch has 8 or more rows
    /// (llama.cpp's per-expert floor for its tiled K-quant product), else 0 (its per-row
    /// kernel; never the four-row groups, which its MUL_MAT_ID does not take).
    private func markExpertOrders(
        _ s: ExpertScratch, list: UnsafePointer<Int>, rows c: Int, used k: Int,
        segments: UnsafeBufferPointer<Segment>, logitRowsOnly: Bool
    ) {
        var r = 0
        while r < c {
            let segment = s.segments[list[r] / k]
            var end = r + 1
            while end < c && s.segments[list[end] / k] == segment { end += 1 }
            let tiled = !logitRowsOnly && segments[segment].microBatch >= 8 && end - r >= 8
            (s.expertOrders + r).update(repeating: tiled ? UInt8(CK_ORDER_TILED) : 0, count: end - r)
            r = end
        }
    }
}
