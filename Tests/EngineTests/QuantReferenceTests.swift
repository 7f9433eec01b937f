import CKernels
import Foundation
import Testing

@testable import Engine

/// The dequantizers against PyPI gguf's numpy ones (Tests/Fixtures/quants.json, made by
/// scripts/make-quant-reference.py), and the C ones against the Swift ones; Q8_K activation
/// quantization against its Swift reference.
@Suite(.serialized)
struct QuantReferenceTests {
    struct Case {
        let type: GGMLType
        let count: Int
        let bytes: [UInt8]
        let values: [Float]
    }

    static func cases() throws -> [Case] {
        let url = TestFixtures.packageRoot.appendingPathComponent("Tests/Fixtures/quants.json")
        let json = try JSONSerialization.jsonObject(with: try Data(contentsOf: url)) as? [String: Any]
        let list = try #require(json?["cases"] as? [[String: Any]])
        func hex(_ s: String) -> [UInt8] {
            var out: [UInt8] = []
            var i = s.startIndex
            while i < s.endIndex {
                let j = s.index(i, offsetBy: 2)
                out.append(UInt8(s[i..<j], radix: 16)!)
                i = j
            }
            return out
        }
        return try list.map { c in
            let name = try #require(c["type"] as? String)
            let type = try #require(GGMLType.allCases.first { $0.description == name }, "unknown type \(name)")
            let raw = hex(try #require(c["values"] as? String))
            let values = stride(from: 0, to: raw.count, by: 4).map { i in
                Float(bitPattern: raw[i..<i + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            }
            return Case(
                type: type, count: try #require(c["count"] as? Int), bytes: hex(try #require(c["bytes"] as? String)),
                values: values)
        }
    }

    @Test func fixtureCoversEveryComputedType() throws {
        let types = Set(try Self.cases().map(\.type))
        #expect(types == WeightMatrix.supportedTypes)
    }

    @Test func swiftDequantizersMatchGGUFPy() throws {
        for c in try Self.cases() {
            let got = try #require(ReferenceKernels.dequantize(c.bytes, type: c.type, count: c.count))
            let bad = (0..<c.count).filter { got[$0].bitPattern != c.values[$0].bitPattern }
            #expect(bad.isEmpty, "\(c.type): \(bad.count) values differ, first at \(bad.first ?? -1)")
            if let i = bad.first { print("\(c.type) value \(i): \(got[i]) vs gguf \(c.values[i])") }
        }
    }

    @Test func cDequantizerMatchesSwiftReference() throws {
        var rng = SeededRandom(seed: 19)
        for c in try Self.cases() {
            // the fixture's blocks, then random ones
            let random = RandomWeights.row(c.type, columns: 512, scale: 0.1, rng: &rng)
            for (bytes, count) in [(c.bytes, c.count), (random, 512)] {
                let expected = ReferenceKernels.dequantize(bytes, type: c.type, count: count)!
                bothPaths { path in
                    var got = [Float](repeating: .nan, count: count)
                    bytes.withUnsafeBytes {
                        ck_dequantize_row(Int32(c.type.rawValue), $0.baseAddress!, &got, Int32(count))
                    }
                    let bad = (0..<count).filter { got[$0].bitPattern != expected[$0].bitPattern }
                    #expect(bad.isEmpty, "\(c.type) \(path): \(bad.count) values differ, first at \(bad.first ?? -1)")
                }
            }
        }
    }

    @Test func q8KQuantizationMatchesReference() {
        var rng = SeededRandom(seed: 8)
        var x = rng.floats(1024, 3)
        for i in 256..<512 { x[i] = 0 }  // an all-zero block
        x[600] = -7  // a block whose largest magnitude is negative
        x[800] = 5
        x[801] = -5  // equal magnitudes: the first wins
        for i in 900..<920 { x[i] = Float(i - 910) * 0.5 }  // values on exact halves
        let expected = ReferenceKernels.quantizeQ8_K(x)
        bothPaths { path in
            var got = [UInt8](repeating: 0xAA, count: expected.count)
            got.withUnsafeMutableBytes {
                ck_quantize_row_q8_K(x, $0.baseAddress!.assumingMemoryBound(to: ck_block_q8_K.self), 1024)
            }
            #expect(got == expected, "\(path)")
        }
        // And the dequantized activations stay within half a step of the input.
        let back = ReferenceKernels.dequantize(expected, type: .q8_K, count: 1024)!
        for b in 0..<4 {
            let step = abs(Float(bitPattern: ReferenceKernels.le32(expected, 292 * b)))
            for i in 256 * b..<256 * (b + 1) { #expect(abs(back[i] - x[i]) <= step * 0.5001 + 1e-7, "value \(i)") }
        }
    }
}
