import CKernels
import Foundation
import Testing

@testable import Engine

/// Once a model has loaded, the process keeps no pages of the model file it does not read: the
/// parsed metadata goes with the `GGUFFile`, the pages loading read are released, and token
/// embedding rows are read with `pread`, which maps nothing (see `TokenEmbedding`).
@Suite(.serialized)
struct ModelFileMemoryTests {
    @Test func readCopiesTheFilesBytesAndRefusesRangesOutsideIt() throws {
        let path = TestFixtures.temporaryPath("bytes.bin")
        let size = 3 * 4096 + 123
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 8) }
        try Data(content).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        let mapping = try #require(GGUFMapping(fd: fd, size: size))
        close(fd)  // the mapping keeps its own descriptor
        for (offset, count) in [(0, 1), (4090, 20), (5000, 6000), (size - 7, 7), (0, size)] {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
            defer { buffer.deallocate() }
            #expect(mapping.read(buffer, at: offset))
            #expect(Array(buffer) == Array(content[offset..<(offset + count)]), "offset \(offset), \(count) bytes")
        }
        let outside = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 1)
        defer { outside.deallocate() }
        #expect(!mapping.read(outside, at: size - 7))
        #expect(!mapping.read(outside, at: -1))
    }

    @Test func embeddingRowsReadWithPreadEqualTheMappedRows() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 1)
        let dim = model.config.embeddingLength
        let viaRead = UnsafeMutablePointer<Float>.allocate(capacity: dim)
        let viaMapping = UnsafeMutablePointer<Float>.allocate(capacity: dim)
        defer {
            viaRead.deallocate()
            viaMapping.deallocate()
        }
        for row in [0, 1, 2, 1234, 30_000, model.config.vocabularySize - 1] {
            model.tokenEmbedding.dequantizeRow(row, into: viaRead)
            model.tokenEmbedding.matrix.dequantizeRow(row, into: viaMapping)
            #expect((0..<dim).allSatisfy { viaRead[$0].bitPattern == viaMapping[$0].bitPattern }, "row \(row)")
        }
    }

    @Test func aLoadedModelKeepsNeitherTheMetadataNorTheFilesPages() throws {
        #expect(ck_interleaving_pays(Int32(GGMLType.q4_1.rawValue)) != 0, "this CPU reads Q4_1 from the file")
        weak var weakFile: GGUFFile?
        let model: LlamaModel
        do {
            let gguf = try GGUFFile(path: try TestFixtures.requireModel())
            weakFile = gguf
            model = try LlamaModel(gguf: gguf, threads: 2)
        }
        #expect(weakFile == nil, "the model keeps the parsed file (its vocabulary and merges) alive")
        let loaded = try #require(model.fileMapping.residentBytes())
        // 200 prompt tokens spread over the whole vocabulary: read through the mapping, each
        // would map the page-cache folio around its row.
        let vocabulary = model.config.vocabularySize
        let prompt = (0..<200).map { Int32($0 * 241 % vocabulary) }
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: vocabulary)
        defer { logits.deallocate() }
        let cache = model.makeCache(capacity: prompt.count + 1)
        try ModelGoldenTests.prefill(model, prompt, cache, logits)
        let afterPrompt = try #require(model.fileMapping.residentBytes())
        #expect(loaded <= 64 << 10, "\(loaded) bytes of the file resident after loading")
        #expect(afterPrompt <= 64 << 10, "\(afterPrompt) bytes of the file resident after a 200-token prompt")
    }
}
