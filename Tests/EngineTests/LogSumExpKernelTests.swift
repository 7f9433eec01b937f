import CKernels
import Foundation
import Testing

/// `ck_logsumexp` (a scored prompt's normalizers) against its double-precision reference and a
/// direct sum, on rows like logits: a vocabulary's width, spread values, impossible tokens (-inf,
/// NaN) that must weigh nothing, a row of them alone, and widths that leave a tail.
@Suite struct LogSumExpKernelTests {
    static func direct(_ row: [Float]) -> Double {
        let finite = row.filter { $0 > -.infinity }
        guard let m = finite.max() else { return -.infinity }
        return Double(m) + log(finite.reduce(0.0) { $0 + exp(Double($1) - Double(m)) })
    }

    @Test(arguments: [49_152, 262_144, 7, 23, 1])
    func matchesTheReferenceAndADirectSum(width: Int) {
        var g = SystemRandomNumberGenerator()
        var row = (0..<width).map { _ in Float.random(in: -30...18, using: &g) }
        if width > 10 {
            row[3] = -.infinity
            row[5] = .nan
        }
        let fast = row.withUnsafeBufferPointer { ck_logsumexp($0.baseAddress!, Int32(width)) }
        let reference = row.withUnsafeBufferPointer { ck_logsumexp_ref($0.baseAddress!, Int32(width)) }
        let expected = Self.direct(row.filter { !$0.isNaN })
        #expect(abs(Double(reference) - expected) < 1e-5, "reference \(reference) vs \(expected)")
        #expect(abs(Double(fast) - expected) < 1e-4, "fast \(fast) vs \(expected)")
    }

    @Test func aRowOfImpossibleTokensIsMinusInfinity() {
        let row: [Float] = [
            -.infinity, .nan, -.infinity, -.infinity, -.infinity, -.infinity, -.infinity, -.infinity, .nan,
        ]
        #expect(row.withUnsafeBufferPointer { ck_logsumexp($0.baseAddress!, Int32(row.count)) } == -.infinity)
        #expect(row.withUnsafeBufferPointer { ck_logsumexp_ref($0.baseAddress!, Int32(row.count)) } == -.infinity)
    }

    @Test func rowsOverThePoolEqualRowByRow() {
        let width = 4_096
        let n = 40
        let x = (0..<(n * width)).map { Float(($0 * 7919) % 1000) / 50 - 10 }
        var out = [Float](repeating: 0, count: n)
        let pool = ck_pool_create(2)
        defer { ck_pool_destroy(pool) }
        x.withUnsafeBufferPointer { xs in
            out.withUnsafeMutableBufferPointer {
                ck_rows_logsumexp(pool, xs.baseAddress!, $0.baseAddress!, Int32(n), Int32(width))
            }
        }
        for r in 0..<n {
            let one = x.withUnsafeBufferPointer { ck_logsumexp($0.baseAddress! + r * width, Int32(width)) }
            #expect(out[r] == one, "row \(r)")
        }
    }
}
