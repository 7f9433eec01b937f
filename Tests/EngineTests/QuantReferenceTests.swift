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

    static func cases(_ key: String = "cases") throws -> [(tensor: String?, case: Case)] {
        let url = TestFixtures.packageRoot.appendingPathComponent("Tests/Fixtures/quants.json")
        let json = try JSONSerialization.jsonObject(with: try Data(contentsOf: url)) as? [String: Any]
        let list = try #require(json?[key] as? [[String: Any]])
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
            let found = Case(
                type: type, count: try #require(c["count"] as? Int), bytes: hex(try #require(c["bytes"] as? String)),
                values: values)
            return (c["tensor"] as? String, found)
        }
    }

    @Test func fixtureCoversEveryComputedType() throws {
        let types = Set(try Self.cases().map(\.case.type))
        #expect(types == WeightMatrix.supportedTypes)
    }

    @Test func swiftDequantizersMatchGGUFPy() throws {
        for c in try Self.cases().map(\.case) {
            let got = try #require(ReferenceKernels.dequantize(c.bytes, type: c.type, count: c.count))
            let bad = (0..<c.count).filter { got[$0].bitPattern != c.values[$0].bitPattern }
            #expect(bad.isEmpty, "\(c.type): \(bad.count) values differ, first at \(bad.first ?? -1)")
            if let i = bad.first { print("\(c.type) value \(i): \(got[i]) vs gguf \(c.values[i])") }
        }
    }

    @Test func cDequantizerMatchesSwiftReference() throws {
        var rng = SeededRandom(seed: 19)
        for c in try Self.cases().map(\.case) {
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

    /// Row 0 of four of Gemma 3 270M's matrices (Q5_0, Q4_K, Q6_K, Q8_0) as the real file stores
    /// them: the fixture's copy is the file's, and the C and Swift dequantizers give gguf's floats.
    @Test func gemmaRowsDequantizeAsGGUFPy() throws {
        let path = TestFixtures.packageRoot.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path
        guard FileManager.default.fileExists(atPath: path) else {
            throw FixtureError("Gemma 3 model missing at \(path): run `make model`")
        }
        let gguf = try GGUFFile(path: path)
        let rows = try Self.cases("gemma_rows")
        #expect(Set(rows.map(\.case.type)) == [.q5_0, .q4_K, .q6_K, .q8_0])
        for (tensor, c) in rows {
            let name = try #require(tensor)
            let data = try gguf.tensorData(name)
            #expect(gguf.tensors[name]?.type == c.type, "\(name)")
            #expect(Array(data.prefix(c.bytes.count)) == c.bytes, "\(name): the fixture holds another row 0")
            let swift = try #require(ReferenceKernels.dequantize(c.bytes, type: c.type, count: c.count))
            var cValues = [Float](repeating: .nan, count: c.count)
            ck_dequantize_row(Int32(c.type.rawValue), data.baseAddress!, &cValues, Int32(c.count))
            let badSwift = (0..<c.count).filter { swift[$0].bitPattern != c.values[$0].bitPattern }
            let badC = (0..<c.count).filter { cValues[$0].bitPattern != c.values[$0].bitPattern }
            #expect(badSwift.isEmpty && badC.isEmpty, "\(name): Swift \(badSwift.count), C \(badC.count) values differ")
            // The real row's dot product with activations, on every path, as the reference has it.
            var rng = SeededRandom(seed: 91)
            let a = WeightTypeKernelTests.activations(rng.floats(c.count, 2), for: c.type)
            let expected = ReferenceKernels.dot(weights: c.bytes, type: c.type, activations: a, k: c.count)
            let tolerance = 2e-6 * WeightTypeKernelTests.magnitude(c.bytes, a, type: c.type, k: c.count) + 1e-6
            bothPaths { path in
                let got = a.withUnsafeBytes {
                    ck_dot(Int32(c.type.rawValue), Int32(c.count), data.baseAddress!, $0.baseAddress!)
                }
                #expect(abs(got - expected) <= tolerance, "\(name) \(path): dot \(got) vs \(expected)")
            }
        }
    }
}
