import Foundation
import Testing

@testable import Engine

@Suite struct GGUFReaderTests {
    /// A small valid file: a few metadata kinds and two tensors.
    func sampleWriter() -> GGUFWriter {
        var w = GGUFWriter()
        w.add("general.architecture", .string("llama"))
        w.add("test.count", .uint32(7))
        w.add("test.ratio", .float32(0.5))
        w.add("test.flag", .bool(true))
        w.add("test.names", .array([.string("a"), .string("bé"), .string("<|im_start|>")]))
        w.add("test.ids", .array([.int32(3), .int32(-1)]))
        w.addTensor(name: "a.weight", shape: [4, 2], floats: [1, 2, 3, 4, 5, 6, 7, 8])
        w.addTensor(name: "b.weight", shape: [32, 1], type: .q8_0, data: [UInt8](repeating: 1, count: 34))
        return w
    }

    func write(_ bytes: [UInt8]) throws -> String {
        let path = TestFixtures.temporaryPath("t.gguf")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func openError(_ bytes: [UInt8]) throws -> GGUFError? {
        let path = try write(bytes)
        do {
            _ = try GGUFFile(path: path)
            return nil
        } catch {
            return error
        }
    }

    @Test func roundTripsMetadataAndTensors() throws {
        let file = try GGUFFile(path: try write(sampleWriter().encoded()))
        #expect(file.version == 3)
        #expect(try file.architecture == "llama")
        #expect(try file.int("test.count") == 7)
        #expect(try file.float("test.ratio") == 0.5)
        #expect(try file.bool("test.flag") == true)
        #expect(try file.stringArray("test.names") == ["a", "bé", "<|im_start|>"])
        #expect(try file.int32Array("test.ids") == [3, -1])
        #expect(file.tensorNames == ["a.weight", "b.weight"])
        let a = try file.tensor("a.weight")
        #expect(a.shape == [4, 2] && a.type == .f32 && a.byteCount == 32)
        #expect(a.offset % file.alignment == 0)
        let data = try file.tensorData("a.weight")
        #expect(data.load(fromByteOffset: 4 * 5, as: Float.self) == 6)
        #expect(try file.tensor("b.weight").byteCount == 34)
    }

    @Test func readsVersion2() throws {
        var w = sampleWriter()
        w.version = 2
        #expect(try GGUFFile(path: try write(w.encoded())).version == 2)
    }

    @Test func typedAccessNamesTheProblem() throws {
        let file = try GGUFFile(path: try write(sampleWriter().encoded()))
        #expect(throws: GGUFError.missingKey("llama.block_count")) { try file.int("llama.block_count") }
        #expect(throws: GGUFError.wrongKeyType(key: "test.count", expected: "string", found: "uint32")) {
            try file.string("test.count")
        }
        #expect(throws: GGUFError.missingTensor("output.weight")) { try file.tensorData("output.weight") }
    }

    @Test func rejectsWrongMagic() throws {
        var bytes = sampleWriter().encoded()
        bytes[0] = UInt8(ascii: "X")
        let error = try openError(bytes)
        guard case .badMagic? = error else {
            Issue.record("expected badMagic, got \(String(describing: error))")
            return
        }
        #expect(error!.description.contains("not a GGUF file"))
    }

    @Test func rejectsUnsupportedVersion() throws {
        var w = sampleWriter()
        w.version = 1
        #expect(try openError(w.encoded()) == .unsupportedVersion(1))
    }

    @Test func rejectsEveryTruncationOfTheHeader() throws {
        let bytes = sampleWriter().encoded()
        let file = try GGUFFile(path: try write(bytes))
        let last = try file.tensor("b.weight")
        let dataEnd = last.offset + last.byteCount
        // Cutting anywhere before the last tensor's end must give an error, never a crash
        // (only the trailing alignment padding may go).
        for cut in stride(from: 0, to: dataEnd, by: 3) {
            let error = try openError(Array(bytes[0..<cut]))
            #expect(error != nil, "cut at \(cut) of \(bytes.count) (data ends at \(dataEnd)) was accepted")
        }
        #expect(try openError(Array(bytes[0..<dataEnd])) == nil)
    }

    @Test func rejectsTensorPastTheEnd() throws {
        var w = GGUFWriter()
        w.add("general.architecture", .string("llama"))
        w.addTensor(name: "big.weight", shape: [64, 64], type: .f32, data: [UInt8](repeating: 0, count: 64))
        let error = try openError(w.encoded())
        guard case .tensorOutOfBounds(let name, _, _)? = error else {
            Issue.record("expected tensorOutOfBounds, got \(String(describing: error))")
            return
        }
        #expect(name == "big.weight")
    }

    @Test func rejectsUnknownTensorTypeNamingTheTensor() throws {
        var w = GGUFWriter()
        w.addTensor(name: "odd.weight", shape: [32], type: .q8_0, data: [UInt8](repeating: 0, count: 34))
        var bytes = w.encoded()
        // The type code follows the name, the dimension count and the one dimension.
        let nameRange = bytes.indices.first {
            Array(bytes[$0..<min($0 + 10, bytes.count)]) == Array("odd.weight".utf8)
        }!
        let typeOffset = nameRange + 10 + 4 + 8
        bytes[typeOffset] = 99
        #expect(try openError(bytes) == .unknownTensorType(tensor: "odd.weight", code: 99))
    }

    @Test func rejectsRowNotFillingBlocks() throws {
        var w = GGUFWriter()
        w.addTensor(name: "ragged.weight", shape: [33], type: .q4_1, data: [UInt8](repeating: 0, count: 40))
        let error = try openError(w.encoded())
        guard case .badTensorShape(let name, _)? = error else {
            Issue.record("expected badTensorShape, got \(String(describing: error))")
            return
        }
        #expect(name == "ragged.weight")
    }

    @Test func missingFileIsAClearError() {
        #expect(throws: GGUFError.self) { try GGUFFile(path: "/nonexistent/model.gguf") }
    }

    @Test func readsTheDefaultModel() throws {
        let file = try GGUFFile(path: try TestFixtures.requireModel())
        #expect(try file.architecture == "llama")
        #expect(try file.int("llama.block_count") == 30)
        #expect(try file.int("llama.embedding_length") == 576)
        #expect(try file.stringArray("tokenizer.ggml.tokens").count == 49152)
        let embd = try file.tensor("token_embd.weight")
        #expect(embd.type == .q8_0 && embd.shape == [576, 49152])
        #expect(try file.tensor("blk.0.attn_q.weight").type == .q4_1)
        #expect(try file.tensor("blk.29.ffn_norm.weight").type == .f32)
        #expect(file.tensors.count == 1 + 30 * 9 + 1)
    }
}
