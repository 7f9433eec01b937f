import CKernels
import Foundation
import Testing

@testable import Engine

/// Prints the speed of the matrix products of Gemma 3 270M's hot weight types on its matrix
/// shapes (and of MXFP4 beside Q4_0), in GB/s of weights read and multiply-adds per second (median of repetitions; one
/// thread timed by its CPU time, the 2-thread pool by the wall clock).
/// Figures only: the machine is shared, so nothing here asserts a time.
@Suite(.serialized)
struct WeightTypeSpeedTests {
    static let shapes: [(type: GGMLType, columns: Int, rows: Int)] = [
        (.q5_0, 640, 2048), (.q5_0, 640, 1024), (.q8_0, 640, 256), (.q4_K, 2048, 640), (.q4_K, 1024, 640),
        (.q6_K, 2048, 640),
        // gpt-oss's expert type beside the four-bit type of the same block size
        (.mxfp4, 2048, 640), (.q4_0, 2048, 640),
    ]

    /// Nanoseconds: the calling thread's CPU time (one thread: what other processes on this
    /// shared machine take does not count) or wall time (the pool).
    static func clock(threadTime: Bool) -> Double {
        var ts = timespec()
        clock_gettime(threadTime ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) * 1e9 + Double(ts.tv_nsec)
    }

    @Test func printHotKernelSpeeds() {
        var rng = SeededRandom(seed: 77)
        let pool = ComputePool(threads: 2)
        for shape in Self.shapes {
            let w = RandomWeights.matrix(shape.type, rows: shape.rows, columns: shape.columns, scale: 0.1, rng: &rng)
            for n in [1, 64] {
                let xRow = WeightTypeKernelTests.activations(rng.floats(shape.columns, 1), for: shape.type)
                let x = (0..<n).flatMap { _ in xRow }
                var y = [Float](repeating: 0, count: n * shape.rows)
                var line = "\(shape.type) \(shape.columns)→\(shape.rows) n=\(n):"
                for (label, p) in [("1 thread", nil), ("pool 2", pool.raw)] as [(String, OpaquePointer?)] {
                    let reps = n == 1 ? 200 : 20
                    var times: [Double] = []
                    w.withUnsafeBytes { wb in
                        x.withUnsafeBytes { xb in
                            y.withUnsafeMutableBufferPointer { yb in
                                var args = ck_matmul_args(
                                    type: Int32(shape.type.rawValue), w: wb.baseAddress!,
                                    w_row_bytes: shape.type.rowBytes(elements: shape.columns)!, rows: Int32(shape.rows),
                                    k: Int32(shape.columns), x: xb.baseAddress!, x_row_bytes: xRow.count, n: Int32(n),
                                    y: yb.baseAddress!, ldy: Int32(shape.rows), orders: nil)
                                for _ in 0..<reps {
                                    let start = Self.clock(threadTime: p == nil)
                                    ck_matmul(p, &args)
                                    times.append(Self.clock(threadTime: p == nil) - start)
                                }
                            }
                        }
                    }
                    times.sort()
                    let median = times[times.count / 2]
                    let macs = Double(shape.columns * shape.rows * n)
                    line += String(
                        format: " %@ %.2f GB/s, %.1f GMAC/s (%.0f µs)", label, Double(w.count) / median,
                        macs / median, median / 1000)
                }
                print(line)
                // The timed products computed: output row 0 of the last token as the scalar kernel has it.
                let expected = w.withUnsafeBytes { wb in
                    xRow.withUnsafeBytes {
                        ck_dot_portable(
                            Int32(shape.type.rawValue), Int32(shape.columns), wb.baseAddress!, $0.baseAddress!)
                    }
                }
                let got = y[(n - 1) * shape.rows]
                #expect(abs(got - expected) <= 1e-4 * max(1, abs(expected)), "\(shape.type): \(got) vs \(expected)")
            }
        }
    }
}
