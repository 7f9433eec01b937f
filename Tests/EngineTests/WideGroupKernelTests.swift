import CKernels
import Testing

@testable import Engine

/// The 16-lane kernels of the interleaved Q4_1, Q5_1 and Q8_0 forms (two groups of eight rows per
/// vector, interleave_wide.c) against the eight-lane VNNI kernels they stand in for: every output
/// bit for bit, over odd and even group counts (an odd last group is read twice), 5...10 tokens
/// (tiles of two and a last one; fewer tokens take the eight-lane kernels), weights with every byte
/// (Q8_0's -128 too), with the pool and without.
@Suite(.serialized, .enabled(if: InterleavedKernelTests.cpuHasVNNIAndBW))
struct WideGroupKernelTests {
    @Test(arguments: [GGMLType.q4_1, .q8_0, .q5_1])
    func wideGroupsGiveTheEightLaneBits(type: GGMLType) throws {
        defer { ck_set_wide_groups(1) }
        let pool = ComputePool(threads: 2)
        var rng = SeededRandom(seed: 977 + UInt64(type.rawValue))
        for (rows, k) in [(8, 32), (16, 64), (24, 96), (40, 576), (136, 1536), (48, 32)] {
            var file = RandomWeights.matrix(type, rows: rows, columns: k, scale: 0.4, rng: &rng)
            let rowBytes = file.count / rows
            if type == .q8_0 {
                // -128 (which ggml never writes, but a file may hold): every eleventh weight byte.
                for i in stride(from: 2, to: file.count, by: 11) where i % 34 >= 2 { file[i] = 0x80 }
            }
            let groupBytes = ck_interleaved_group_bytes(Int32(type.rawValue), Int32(k))
            var packed = [UInt8](repeating: 0, count: rows / 8 * groupBytes)
            let packedType = file.withUnsafeBytes { src in
                packed.withUnsafeMutableBytes { dst in
                    ck_interleave(
                        Int32(type.rawValue), src.baseAddress!, rowBytes, Int32(rows), Int32(k), dst.baseAddress!)
                }
            }
            for n in 5...10 {
                var activations: [UInt8] = []
                for t in 0..<n {
                    // Activations at full scale in some blocks (±127 bytes), small in others.
                    var x = rng.floats(k, t % 2 == 0 ? 2 : 0.01)
                    x[0] = 3
                    let eightOne = type == .q4_1 || type == .q5_1
                    activations += eightOne ? ReferenceKernels.quantizeQ8_1(x) : ReferenceKernels.quantizeQ8_0(x)
                }
                for usePool in [false, true] {
                    func product() -> [Float] {
                        packed.withUnsafeBytes { w in
                            InterleavedKernelTests.product(
                                type: packedType, weights: w.baseAddress!, stride: groupBytes, rows: rows, k: k,
                                activations: activations, n: n, pool: usePool ? pool : nil)
                        }
                    }
                    ck_set_wide_groups(0)
                    let eight = product()
                    ck_set_wide_groups(1)
                    let wide = product()
                    let differing = zip(eight, wide).count { $0.bitPattern != $1.bitPattern }
                    #expect(differing == 0, "\(type) rows=\(rows) k=\(k) n=\(n) pool=\(usePool)")
                    #expect(!wide.contains { $0.isNaN }, "every output written")
                }
            }
        }
    }
}
