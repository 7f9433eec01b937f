import CKernels
import Testing

@testable import Engine

/// The interleaved weight forms (eight rows per block, made at load time) against the file
/// layout they were made from: Q4_0, Q4_1, Q5_0 and Q8_0 must give the per-row kernel's results bit
/// for bit (the reference answers depend on its rounding).
@Suite(.serialized)
struct InterleavedKernelTests {
    /// `rows × k` random weights quantized to `type`, in the file layout.
    static func quantizedRows(_ type: GGMLType, rows: Int, k: Int, rng: inout SeededRandom) -> [UInt8] {
        // Q4_0, Q5_0: random bytes with sized scales (every nibble and fifth-bit pattern), as the
        // weight-type tests use.
        if type == .q4_0 || type == .q5_0 {
            return RandomWeights.matrix(type, rows: rows, columns: k, scale: 0.4, rng: &rng)
        }
        var bytes: [UInt8] = []
        for _ in 0..<rows {
            let row = rng.floats(k, 0.4)
            bytes += type == .q4_1 ? ReferenceKernels.quantizeQ4_1(row) : ReferenceKernels.quantizeQ8_0(row)
        }
        return bytes
    }

    static func product(
        type: Int32, weights: UnsafeRawPointer, stride: Int, rows: Int, k: Int, activations: [UInt8], n: Int,
        pool: ComputePool?
    ) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        activations.withUnsafeBytes { xb in
            y.withUnsafeMutableBufferPointer { yb in
                var args = ck_matmul_args(
                    type: type, w: weights, w_row_bytes: stride, rows: Int32(rows), k: Int32(k),
                    x: xb.baseAddress!, x_row_bytes: activations.count / n, n: Int32(n), y: yb.baseAddress!,
                    ldy: Int32(rows), orders: nil)
                ck_matmul(pool?.raw, &args)
            }
        }
        return y
    }

    /// Q5_0 stays packed where the VNNI kernel reads it (AVX-512 BW too) and is widened into the
    /// Q8_0 form elsewhere.
    static func interleavedType(_ type: GGMLType) -> Int32 {
        switch type {
        case .q4_0: Int32(CK_TYPE_Q4_0_X8)
        case .q4_1: Int32(CK_TYPE_Q4_1_X8)
        case .q5_0: Self.cpuHasVNNIAndBW ? Int32(CK_TYPE_Q5_0_X8) : Int32(CK_TYPE_Q8_0_X8)
        default: Int32(CK_TYPE_Q8_0_X8)
        }
    }

    /// Bytes of one interleaved group: eight rows' bytes, or eight Q8_0 rows' for widened Q5_0.
    static func groupBytes(_ type: GGMLType, k: Int, rowBytes: Int) -> Int {
        Self.interleavedType(type) == Int32(CK_TYPE_Q8_0_X8) ? 8 * 34 * (k / 32) : 8 * rowBytes
    }

    @Test(arguments: [GGMLType.q4_0, .q4_1, .q5_0, .q8_0])
    func interleavedProductsMatchTheFileLayout(type: GGMLType) throws {
        let pool = ComputePool(threads: 2)
        var rng = SeededRandom(seed: 4242 + UInt64(type.rawValue))
        for (rows, k) in [(8, 32), (40, 96), (136, 576), (24, 1536)] {
            let file = Self.quantizedRows(type, rows: rows, k: k, rng: &rng)
            let rowBytes = file.count / rows
            let groupBytes = ck_interleaved_group_bytes(Int32(type.rawValue), Int32(k))
            #expect(groupBytes == Self.groupBytes(type, k: k, rowBytes: rowBytes), "eight rows per group")
            var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
            let packedType = file.withUnsafeBytes { src in
                packed.withUnsafeMutableBytes { dst in
                    ck_interleave(
                        Int32(type.rawValue), src.baseAddress!, rowBytes, Int32(rows), Int32(k), dst.baseAddress!)
                }
            }
            #expect(packedType == Self.interleavedType(type))
            for n in [1, 2, 3, 5] {
                var activations: [UInt8] = []
                var reference = [Float](repeating: 0, count: n * rows)
                for t in 0..<n {
                    let x = rng.floats(k, 2)
                    let q = type == .q4_1 ? ReferenceKernels.quantizeQ8_1(x) : ReferenceKernels.quantizeQ8_0(x)
                    activations += q
                    for r in 0..<rows {
                        let w = Array(file[r * rowBytes..<(r + 1) * rowBytes])
                        switch type {
                        case .q4_1: reference[t * rows + r] = ReferenceKernels.dotQ4_1Q8_1(w, q, k: k)
                        case .q8_0: reference[t * rows + r] = ReferenceKernels.dotQ8_0Q8_0(w, q, k: k)
                        default:
                            reference[t * rows + r] = ReferenceKernels.dot(weights: w, type: type, activations: q, k: k)
                        }
                    }
                }
                // The per-row kernel on the file layout (fast path: llama.cpp's rounding).
                let perRow = file.withUnsafeBytes { w in
                    Self.product(
                        type: Int32(type.rawValue), weights: w.baseAddress!, stride: rowBytes, rows: rows, k: k,
                        activations: activations, n: n, pool: nil)
                }
                try bothPaths { path in
                    for usePool in [false, true] {
                        let got = packed.withUnsafeBytes { w in
                            Self.product(
                                type: packedType, weights: w.baseAddress!, stride: groupBytes, rows: rows, k: k,
                                activations: activations, n: n, pool: usePool ? pool : nil)
                        }
                        let what = "\(type) \(path) rows=\(rows) k=\(k) n=\(n) pool=\(usePool)"
                        for i in got.indices {
                            // Every path keeps the per-row order (ggml's; Q8_0 by 4-value chunks).
                            try #require(got[i] == perRow[i], "\(what): out \(i) \(got[i]) vs \(perRow[i])")
                            try #require(
                                close(got[i], reference[i], rel: 1e-5, abs: 1e-4),
                                "\(what): out \(i) \(got[i]) vs reference \(reference[i])")
                        }
                    }
                }
            }
        }
    }

    /// Read from the kernel's flags, as the kernels' own dispatch reads CPUID.
    static let cpuHasVNNI: Bool = {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        return info.contains("avx512_vnni")
    }()

    static let cpuHasVNNIAndBW: Bool = {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        return info.contains("avx512_vnni") && info.contains("avx512bw")
    }()

    /// The AVX2 kernels of the interleaved forms (CPUs without VNNI; forced here with VNNI off so
    /// they run on any AVX2 CPU) against the per-row AVX2 kernels on the file layout: Q4_0, Q4_1,
    /// Q8_0 and Q5_0 (widened into the Q8_0 form) bit for bit, over odd and even group counts, 1...9
    /// tokens (tiles of four and their remainders), with the pool's chunks and without.
    @Test(.enabled(if: ck_cpu_has_avx2_fma() != 0), arguments: [GGMLType.q4_0, .q4_1, .q8_0, .q5_0])
    func avx2InterleavedProductsAreThePerRowProducts(type: GGMLType) throws {
        ck_set_vnni(0)
        defer { ck_set_vnni(1) }
        let pool = ComputePool(threads: 2)
        var rng = SeededRandom(seed: 9090 + UInt64(type.rawValue))
        for (rows, k) in [(8, 32), (24, 576), (40, 96), (136, 576), (200, 1536)] {
            let file = Self.quantizedRows(type, rows: rows, k: k, rng: &rng)
            let rowBytes = file.count / rows
            let groupBytes = ck_interleaved_group_bytes(Int32(type.rawValue), Int32(k))
            var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
            let packedType = file.withUnsafeBytes { src in
                packed.withUnsafeMutableBytes { dst in
                    ck_interleave(
                        Int32(type.rawValue), src.baseAddress!, rowBytes, Int32(rows), Int32(k), dst.baseAddress!)
                }
            }
            // Without VNNI every form is read by an AVX2 kernel: Q5_0 is widened into Q8_0's.
            let ownForm = type == .q4_0 || type == .q4_1
            #expect(packedType == (ownForm ? Self.interleavedType(type) : Int32(CK_TYPE_Q8_0_X8)))
            #expect(groupBytes == (ownForm ? 8 * rowBytes : 8 * 34 * (k / 32)))
            for n in 1...9 {
                var activations: [UInt8] = []
                for _ in 0..<n {
                    let x = rng.floats(k, 2)
                    activations += type == .q4_1 ? ReferenceKernels.quantizeQ8_1(x) : ReferenceKernels.quantizeQ8_0(x)
                }
                let perRow = file.withUnsafeBytes { w in
                    Self.product(
                        type: Int32(type.rawValue), weights: w.baseAddress!, stride: rowBytes, rows: rows, k: k,
                        activations: activations, n: n, pool: nil)
                }
                for usePool in [false, true] {
                    let got = packed.withUnsafeBytes { w in
                        Self.product(
                            type: packedType, weights: w.baseAddress!, stride: groupBytes, rows: rows, k: k,
                            activations: activations, n: n, pool: usePool ? pool : nil)
                    }
                    for i in got.indices {
                        try #require(
                            got[i].bitPattern == perRow[i].bitPattern,
                            "\(type) rows=\(rows) k=\(k) n=\(n) pool=\(usePool): out \(i) \(got[i]) vs \(perRow[i])")
                    }
                }
            }
        }
    }

    /// Which forms the loader makes: those this CPU has fast kernels for (AVX2 or VNNI).
    @Test func interleavingPaysForTheFormsThisCPUHasKernelsFor() {
        let avx2: Int32 = ck_cpu_has_avx2_fma() != 0 ? 1 : 0
        #expect(ck_interleaving_pays(Int32(GGMLType.q4_0.rawValue)) == avx2)
        #expect(ck_interleaving_pays(Int32(GGMLType.q4_1.rawValue)) == avx2)
        #expect(ck_interleaving_pays(Int32(GGMLType.q8_0.rawValue)) == avx2)
        #expect(ck_interleaving_pays(Int32(GGMLType.q5_0.rawValue)) == avx2)
        #expect(ck_interleaving_pays(Int32(GGMLType.f16.rawValue)) == 0)
    }

    /// Q4_0's fast kernels take the activations' -8 corrections from one table of 1,024 blocks:
    /// rows wider than 8,192 columns go in tiles of fewer than four tokens, rows wider than
    /// 32,768 through the portable kernel. Every path (VNNI where this CPU has it, AVX2, portable)
    /// gives the per-row kernel's bits there too, with token counts that leave partial tiles.
    @Test func q4_0WideRowsKeepThePerRowBits() throws {
        var rng = SeededRandom(seed: 5151)
        for (rows, k) in [(16, 9600), (8, 32800)] {
            let file = Self.quantizedRows(.q4_0, rows: rows, k: k, rng: &rng)
            let rowBytes = file.count / rows
            let groupBytes = ck_interleaved_group_bytes(Int32(GGMLType.q4_0.rawValue), Int32(k))
            #expect(groupBytes == 8 * rowBytes)
            var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
            let packedType = file.withUnsafeBytes { src in
                packed.withUnsafeMutableBytes { dst in
                    ck_interleave(
                        Int32(GGMLType.q4_0.rawValue), src.baseAddress!, rowBytes, Int32(rows), Int32(k),
                        dst.baseAddress!)
                }
            }
            #expect(packedType == Int32(CK_TYPE_Q4_0_X8))
            let n = 5
            var activations: [UInt8] = []
            for _ in 0..<n { activations += ReferenceKernels.quantizeQ8_0(rng.floats(k, 2)) }
            let perRow = file.withUnsafeBytes { w in
                Self.product(
                    type: Int32(GGMLType.q4_0.rawValue), weights: w.baseAddress!, stride: rowBytes, rows: rows, k: k,
                    activations: activations, n: n, pool: nil)
            }
            try bothPaths { path in
                let got = packed.withUnsafeBytes { w in
                    Self.product(
                        type: packedType, weights: w.baseAddress!, stride: groupBytes, rows: rows, k: k,
                        activations: activations, n: n, pool: nil)
                }
                for i in got.indices {
                    try #require(
                        got[i].bitPattern == perRow[i].bitPattern,
                        "\(path) rows=\(rows) k=\(k): out \(i) \(got[i]) vs \(perRow[i])")
                }
            }
        }
    }

    @Test func shapesWithoutAnInterleavedFormAreRefused() {
        let src = [UInt8](repeating: 0, count: 20 * 12)
        var dst = [UInt8](repeating: 0, count: 4096)
        let refused = src.withUnsafeBytes { s in
            dst.withUnsafeMutableBytes { d in
                // 12 rows (not a multiple of 8), k = 48 (not a multiple of 32), an f32 matrix; Q4_0 the same.
                [
                    ck_interleave(Int32(GGMLType.q4_1.rawValue), s.baseAddress!, 20, 12, 32, d.baseAddress!),
                    ck_interleave(Int32(GGMLType.q4_1.rawValue), s.baseAddress!, 20, 8, 48, d.baseAddress!),
                    ck_interleave(Int32(GGMLType.f32.rawValue), s.baseAddress!, 20, 8, 32, d.baseAddress!),
                    ck_interleave(Int32(GGMLType.q4_0.rawValue), s.baseAddress!, 18, 12, 32, d.baseAddress!),
                    ck_interleave(Int32(GGMLType.q4_0.rawValue), s.baseAddress!, 18, 8, 48, d.baseAddress!),
                ]
            }
        }
        #expect(refused == [-1, -1, -1, -1, -1])
        #expect(ck_interleaved_group_bytes(Int32(GGMLType.f16.rawValue), 64) == 0)
    }

    /// Several products in one pool task give what each gives alone (rows not multiples of the
    /// chunk size, more chunks than threads).
    @Test func productsSharingOnePoolTaskMatchSeparateProducts() {
        let pool = ComputePool(threads: 2)
        var rng = SeededRandom(seed: 77)
        let k = 96
        let n = 3
        let rowCounts = [37, 8, 200]
        let matrices = rowCounts.map { Self.quantizedRows(.q4_1, rows: $0, k: k, rng: &rng) }
        var activations: [UInt8] = []
        for _ in 0..<n { activations += ReferenceKernels.quantizeQ8_1(rng.floats(k, 2)) }
        let rowBytes = k / 32 * 20
        var separate: [[Float]] = []
        for (m, rows) in rowCounts.enumerated() {
            separate.append(
                matrices[m].withUnsafeBytes { w in
                    Self.product(
                        type: Int32(GGMLType.q4_1.rawValue), weights: w.baseAddress!, stride: rowBytes, rows: rows,
                        k: k, activations: activations, n: n, pool: nil)
                })
        }
        var outputs = rowCounts.map { [Float](repeating: .nan, count: n * $0) }
        // Copies with stable addresses for the duration of the call.
        let copies = matrices.map { m -> UnsafeMutableRawBufferPointer in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: m.count, alignment: 64)
            m.withUnsafeBytes { b.copyMemory(from: $0) }
            return b
        }
        defer { copies.forEach { $0.deallocate() } }
        let outs = outputs.map { UnsafeMutableBufferPointer<Float>.allocate(capacity: $0.count) }
        defer { outs.forEach { $0.deallocate() } }
        activations.withUnsafeBytes { xb in
            var args = rowCounts.indices.map { m in
                ck_matmul_args(
                    type: Int32(GGMLType.q4_1.rawValue), w: copies[m].baseAddress!, w_row_bytes: rowBytes,
                    rows: Int32(rowCounts[m]), k: Int32(k), x: xb.baseAddress!, x_row_bytes: activations.count / n,
                    n: Int32(n), y: outs[m].baseAddress!, ldy: Int32(rowCounts[m]), orders: nil)
            }
            ck_matmul_many(pool.raw, &args, Int32(args.count))
        }
        for m in rowCounts.indices { outputs[m] = Array(outs[m]) }
        #expect(outputs == separate)
    }
}
