import CKernels
import Testing

@testable import Engine

/// The K-quants' interleaved forms (eight rows per super-block, made at load time where the CPU
/// has AVX2) against the per-row kernels on the file layout, bit for bit in each of
/// ggml's orders, whichever order each token has, on every path: Q4_K's one-token order (one
/// FMA per super-block) and four-token order (per 64 values, tokens in whole groups of four);
/// Q6_K's and Q5_K's one-token order (eight lanes per row) and tiled order (micro-batches of 8+
/// rows), and Q3_K's and Q2_K's the same two. Each has AVX2 kernels besides the VNNI ones
/// (`bothPaths`' "fast-avx2" runs them on any CPU).
@Suite(.serialized)
struct InterleavedKQuantTests {
    static let group4 = UInt8(CK_ORDER_GROUP4)
    static let tiled = UInt8(CK_ORDER_TILED)

    /// What the interleaved form must give: the file layout's per-row products, except for Q2_K on
    /// the AVX-512 path, where the form takes llama.cpp's repacked order
    /// (`ck_dot_q2_k_repacked_reference`: GEMM rows over half super-blocks, GEMV rows over whole
    /// ones) and the per-row kernels keep the plain one (llama.cpp does not repack a matrix that
    /// is not in whole groups of eight rows).
    static func expected(
        _ type: GGMLType, path: String, file: [UInt8], rowBytes: Int, rows: Int, k: Int, activations: [UInt8],
        n: Int, orders: [UInt8]?
    ) -> [Float] {
        guard type == .q2_K && path == "fast" && InterleavedKernelTests.cpuHasVNNI else {
            return product(
                type: Int32(type.rawValue), weights: file, stride: rowBytes, rows: rows, k: k,
                activations: activations, n: n, orders: orders, pool: nil)
        }
        let xRowBytes = activations.count / n
        var y = [Float](repeating: .nan, count: n * rows)
        file.withUnsafeBytes { wb in
            activations.withUnsafeBytes { xb in
                for t in 0..<n {
                    let halves = orders.map { $0[t] & group4 != 0 } ?? (t < n - n % 4)
                    for r in 0..<rows {
                        y[t * rows + r] = ck_dot_q2_k_repacked_reference(
                            Int32(k), wb.baseAddress! + r * rowBytes, xb.baseAddress! + t * xRowBytes, halves ? 1 : 0)
                    }
                }
            }
        }
        return y
    }

    static func product(
        type: Int32, weights: [UInt8], stride: Int, rows: Int, k: Int, activations: [UInt8], n: Int,
        orders: [UInt8]?, pool: ComputePool?
    ) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        weights.withUnsafeBytes { wb in
            activations.withUnsafeBytes { xb in
                y.withUnsafeMutableBufferPointer { yb in
                    func run(_ o: UnsafePointer<UInt8>?) {
                        var args = ck_matmul_args(
                            type: type, w: wb.baseAddress!, w_row_bytes: stride, rows: Int32(rows), k: Int32(k),
                            x: xb.baseAddress!, x_row_bytes: activations.count / n, n: Int32(n),
                            y: yb.baseAddress!, ldy: Int32(rows), orders: o)
                        ck_matmul(pool?.raw, &args)
                    }
                    if let orders { orders.withUnsafeBufferPointer { run($0.baseAddress) } } else { run(nil) }
                }
            }
        }
        return y
    }

    /// `n` rows of random activations (scale 2) quantized to Q8_K, one after the other.
    static func activations(n: Int, k: Int, rng: inout SeededRandom) -> [UInt8] {
        var activations: [UInt8] = []
        for _ in 0..<n {
            let x = rng.floats(k, 2)
            var q = [UInt8](repeating: 0, count: GGMLType.q8_K.rowBytes(elements: k)!)
            q.withUnsafeMutableBytes { GGMLType.q8_K.quantizeActivations(x, into: $0.baseAddress!, count: k) }
            activations += q
        }
        return activations
    }

    /// 8 rows of k = 256: one super-block per row; k = 640 is not whole super-blocks.
    @Test(arguments: [(GGMLType.q5_K, 1440), (.q4_K, 1184), (.q6_K, 1680)])
    func theQ4KQ5KAndQ6KFormsAreMadeWhereTheCPUHasAVX2(type: GGMLType, blockBytes: Int) {
        let t = Int32(type.rawValue)
        #expect(ck_interleaving_pays(t) == (ck_cpu_has_avx2_fma() != 0 || InterleavedKernelTests.cpuHasVNNI ? 1 : 0))
        #expect(ck_interleaved_group_bytes(t, 256) == blockBytes)
        #expect(ck_interleaved_group_bytes(t, 8192) == 32 * blockBytes)
        #expect(ck_interleaved_group_bytes(t, 640) == 0)
    }

    @Test(arguments: [(GGMLType.q3_K, 912), (.q2_K, 672)])
    func theQ3KAndQ2KFormsAreMadeWhereTheCPUHasAVX2(type: GGMLType, blockBytes: Int) {
        let t = Int32(type.rawValue)
        #expect(ck_interleaving_pays(t) == (ck_cpu_has_avx2_fma() != 0 || InterleavedKernelTests.cpuHasVNNI ? 1 : 0))
        #expect(ck_interleaved_group_bytes(t, 256) == blockBytes)
        #expect(ck_interleaved_group_bytes(t, 8192) == 32 * blockBytes)
        #expect(ck_interleaved_group_bytes(t, 640) == 0)
        // Rows not a multiple of 8 have no form (WeightMatrix keeps the file layout).
        let file = [UInt8](repeating: 0, count: 12 * type.rowBytes(elements: 256)!)
        var packed = [UInt8](repeating: 0, count: 2 * blockBytes)
        let made = file.withUnsafeBytes { src in
            packed.withUnsafeMutableBytes {
                ck_interleave(t, src.baseAddress!, file.count / 12, 12, 256, $0.baseAddress!)
            }
        }
        #expect(made == -1)
    }

    static func form(_ type: GGMLType) -> Int32 {
        switch type {
        case .q4_K: Int32(CK_TYPE_Q4_K_X8)
        case .q5_K: Int32(CK_TYPE_Q5_K_X8)
        case .q3_K: Int32(CK_TYPE_Q3_K_X8)
        case .q2_K: Int32(CK_TYPE_Q2_K_X8)
        default: Int32(CK_TYPE_Q6_K_X8)
        }
    }

    static func blockBytes(_ type: GGMLType) -> Int {
        switch type {
        case .q4_K: 1184
        case .q5_K: 1440
        case .q3_K: 912
        case .q2_K: 672
        default: 1680
        }
    }

    @Test(arguments: [GGMLType.q4_K, .q6_K, .q5_K, .q3_K, .q2_K])
    func interleavedProductsAreThePerRowProductsInEachOrder(type: GGMLType) throws {
        let pool = ComputePool(threads: 2)
        var rng = SeededRandom(seed: 4_747 + UInt64(type.rawValue))
        let kernelType = Int32(type.rawValue)
        let form = Self.form(type)
        for (rows, k) in [(8, 256), (24, 512), (136, 1024)] {
            let file = RandomWeights.matrix(type, rows: rows, columns: k, scale: 0.4, rng: &rng)
            let rowBytes = file.count / rows
            let groupBytes = ck_interleaved_group_bytes(kernelType, Int32(k))
            #expect(groupBytes == k / 256 * Self.blockBytes(type))
            var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
            let packedType = file.withUnsafeBytes { src in
                packed.withUnsafeMutableBytes { dst in
                    ck_interleave(kernelType, src.baseAddress!, rowBytes, Int32(rows), Int32(k), dst.baseAddress!)
                }
            }
            try #require(packedType == form)
            for n in [1, 2, 3, 4, 5, 7, 9] {
                let activations = Self.activations(n: n, k: k, rng: &rng)
                // No orders (whole groups of four from the first), and per-token orders with
                // groups of four in the middle and tokens alone on both sides.
                let mixed = (0..<n).map { t in t >= 1 && t < 1 + (n - 1) / 4 * 4 ? Self.group4 | Self.tiled : 0 }
                // Q5_K's and Q6_K's tiled tokens need not come in fours: every other one here.
                let alternate = (0..<n).map { t in t % 2 == 0 ? Self.tiled : 0 }
                // The two orders round differently: a kernel that mixed them up would be caught.
                let all = Self.product(
                    type: kernelType, weights: file, stride: rowBytes, rows: rows, k: k, activations: activations,
                    n: n, orders: [UInt8](repeating: Self.group4 | Self.tiled, count: n), pool: nil)
                let none = Self.product(
                    type: kernelType, weights: file, stride: rowBytes, rows: rows, k: k, activations: activations,
                    n: n, orders: [UInt8](repeating: 0, count: n), pool: nil)
                #expect(zip(all, none).contains { $0.bitPattern != $1.bitPattern }, "rows=\(rows) k=\(k) n=\(n)")
                for orders in [nil, mixed, alternate] {
                    bothPaths { path in
                        let perRow = Self.expected(
                            type, path: path, file: file, rowBytes: rowBytes, rows: rows, k: k,
                            activations: activations, n: n, orders: orders)
                        for usePool in [false, true] {
                            let got = Self.product(
                                type: packedType, weights: packed, stride: groupBytes, rows: rows, k: k,
                                activations: activations, n: n, orders: orders, pool: usePool ? pool : nil)
                            for i in got.indices where got[i].bitPattern != perRow[i].bitPattern {
                                Issue.record(
                                    "\(path) rows=\(rows) k=\(k) n=\(n) orders=\(orders ?? []) pool=\(usePool): out \(i) \(got[i]) vs \(perRow[i])"
                                )
                                return
                            }
                        }
                    }
                }
            }
        }
    }

    /// Q3_K's and Q2_K's kernels keep group sums in int16 halves (the forms' files say why that
    /// is exact): blocks at the ends of the codes and scales, against activations all at ±127,
    /// make the largest sums there are (Q3_K: 16 × 4 × 127 per group, scale -32). Each row is
    /// one extreme or a random one; rows are checked bit for bit against the per-row kernels.
    @Test(arguments: [GGMLType.q3_K, .q2_K])
    func extremeBlocksGiveThePerRowProducts(type: GGMLType) throws {
        var rng = SeededRandom(seed: 9_191 + UInt64(type.rawValue))
        let kernelType = Int32(type.rawValue)
        let (rows, k) = (32, 512)
        var file = RandomWeights.matrix(type, rows: rows, columns: k, scale: 0.4, rng: &rng)
        let rowBytes = file.count / rows
        let blockBytes = type.blockBytes
        for r in 0..<rows {
            for b in 0..<k / 256 {
                let at = r * rowBytes + b * blockBytes
                // Q3_K: hmask[32], qs[64], scales[12], d; Q2_K: scales[16], qs[64], d, dmin.
                switch (type, r % 4) {
                case (.q3_K, 0): for i in 0..<108 { file[at + i] = 0 }  // q = -4, scale -32
                case (.q3_K, 1): for i in 0..<96 { file[at + i] = 0xFF }  // q = 3
                case (.q3_K, 2):  // q = -4, scale 31 (6-bit 63: low nibbles 15, high bits 3)
                    for i in 0..<96 { file[at + i] = 0 }
                    for i in 96..<108 { file[at + i] = 0xFF }
                case (.q2_K, 0), (.q2_K, 1): for i in 0..<80 { file[at + i] = 0xFF }  // q = 3, scale and min 15
                case (.q2_K, 2): for i in 16..<80 { file[at + i] = 0 }
                default: break
                }
            }
        }
        let groupBytes = ck_interleaved_group_bytes(kernelType, Int32(k))
        var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
        let packedType = file.withUnsafeBytes { src in
            packed.withUnsafeMutableBytes { dst in
                ck_interleave(kernelType, src.baseAddress!, rowBytes, Int32(rows), Int32(k), dst.baseAddress!)
            }
        }
        try #require(packedType == Self.form(type))
        for n in [1, 9] {
            var activations: [UInt8] = []
            for t in 0..<n {
                // Q8_K maps the first largest value to -127: all equal, or alternating signs.
                let x = (0..<k).map { i in t % 2 == 0 ? Float(1) : (i % 2 == 0 ? 1 : -1) }
                var q = [UInt8](repeating: 0, count: GGMLType.q8_K.rowBytes(elements: k)!)
                q.withUnsafeMutableBytes { GGMLType.q8_K.quantizeActivations(x, into: $0.baseAddress!, count: k) }
                activations += q
            }
            for orders in [nil, [UInt8](repeating: Self.tiled, count: n)] {
                bothPaths { path in
                    let perRow = Self.expected(
                        type, path: path, file: file, rowBytes: rowBytes, rows: rows, k: k, activations: activations,
                        n: n, orders: orders)
                    let got = Self.product(
                        type: packedType, weights: packed, stride: groupBytes, rows: rows, k: k,
                        activations: activations, n: n, orders: orders, pool: nil)
                    #expect(perRow.allSatisfy { $0.isFinite })
                    #expect(got.map(\.bitPattern) == perRow.map(\.bitPattern), "\(path) n=\(n) orders=\(orders ?? [])")
                }
            }
        }
    }

    /// A prompt's tokens go over the Q4_K, Q5_K and Q6_K forms a pass of rows at a time (a few
    /// hundred KiB of the form, so it stays in L2 while every walk of tokens reads it), and Q5_K
    /// gathers 64 tiled tokens at a time: a matrix of several passes with an odd group last, 70
    /// tokens (two gatherings, a last walk of six) with one-token rows among them, against the
    /// per-row kernels bit for bit, with and without the pool (whose chunks start passes mid-matrix).
    @Test(arguments: [GGMLType.q4_K, .q5_K, .q6_K])
    func tiledTokensOverPassesOfRowsGiveThePerRowProducts(type: GGMLType) throws {
        let pool = ComputePool(threads: 2)
        var rng = SeededRandom(seed: 3_131 + UInt64(type.rawValue))
        let kernelType = Int32(type.rawValue)
        let (rows, k, n) = (8 * 13, 8192, 70)
        let file = RandomWeights.matrix(type, rows: rows, columns: k, scale: 0.4, rng: &rng)
        let rowBytes = file.count / rows
        let groupBytes = ck_interleaved_group_bytes(kernelType, Int32(k))
        #expect(13 * groupBytes > 256 * 1024, "the matrix is one pass")
        var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
        let packedType = file.withUnsafeBytes { src in
            packed.withUnsafeMutableBytes { dst in
                ck_interleave(kernelType, src.baseAddress!, rowBytes, Int32(rows), Int32(k), dst.baseAddress!)
            }
        }
        try #require(packedType == Self.form(type))
        let activations = Self.activations(n: n, k: k, rng: &rng)
        // Tokens 5 and 40 alone (the one-token order), the rest tiled.
        let orders = (0..<n).map { t in t == 5 || t == 40 ? 0 : Self.group4 | Self.tiled }
        bothPaths { path in
            let perRow = Self.expected(
                type, path: path, file: file, rowBytes: rowBytes, rows: rows, k: k, activations: activations, n: n,
                orders: orders)
            for usePool in [false, true] {
                let got = Self.product(
                    type: packedType, weights: packed, stride: groupBytes, rows: rows, k: k,
                    activations: activations, n: n, orders: orders, pool: usePool ? pool : nil)
                let wrong = got.indices.filter { got[$0].bitPattern != perRow[$0].bitPattern }
                let count = wrong.count
                #expect(
                    count == 0,
                    "\(path) pool=\(usePool): \(wrong.count) outputs differ, first \(wrong.first.map { "token \($0 / rows) row \($0 % rows)" } ?? "")"
                )
            }
        }
    }
}
