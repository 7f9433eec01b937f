import Testing

@testable import Engine

/// The load copies every weight matrix into anonymous memory (`WeightCopier`): the float types,
/// which have no interleaved form, verbatim. Their products then read the copy, which starts
/// `pageOffset` bytes into a page of a buffer on a huge-page boundary, and give the file
/// layout's logits bit for bit.
@Suite(.serialized)
struct WeightCopyTests {
    static let tokens: [Int32] = [3, 17, 60, 0, 42, 42, 7, 33, 15]

    @Test(arguments: [GGMLType.bf16, .f16, .f32])
    func floatMatricesAreCopiedVerbatimWithTheFilesLogits(type: GGMLType) throws {
        let tiny = WideTinyModel(layerTypes: WideTinyModel.mixedLayerTypes.map { $0.map { _ in type } })
        let path = try tiny.write()
        let file = try LlamaModel(gguf: try GGUFFile(path: path), threads: 2, copyWeights: false)
        let copied = try LlamaModel(gguf: try GGUFFile(path: path), threads: 2, copyWeights: true)

        let matrices = copied.layers.flatMap(\.matrices)
        #expect(copied.weightCopies == .all)
        #expect(matrices.allSatisfy { $0.isCopied && $0.interleavedByteCount == 0 }, "\(type): every matrix copied")
        for matrix in matrices {
            #expect(
                Int(bitPattern: matrix.productData) % WeightCopier.page == WeightCopier.pageOffset,
                "\(matrix.name) starts \(WeightCopier.pageOffset) bytes into a page")
        }
        // What stays in the file: the embedding, looked up there (the head is tied to it).
        #expect(copied.mappedWeightBytes == copied.tokenEmbedding.matrix.fileBytes)
        #expect(file.copiedWeightBytes == 0 && file.mappedWeightBytes == file.weightBytes)
        #expect(copied.copiedWeightBytes >= matrices.reduce(0) { $0 + $1.rows * $1.rowBytes })

        try ModelLogits.expectSame(file, copied, tokens: Self.tokens, stepped: 4, "\(type)")
    }

    @Test func theBufferStartsOnAHugePageBoundary() throws {
        let buffer = try #require(WeightCopyBuffer(byteCount: 3 * WeightCopyBuffer.hugePage + 5))
        #expect(Int(bitPattern: buffer.bytes.baseAddress) % WeightCopyBuffer.hugePage == 0)
        #expect(buffer.bytes.count == 3 * WeightCopyBuffer.hugePage + 5)
        // Writable to its last byte.
        buffer.bytes[buffer.bytes.count - 1] = 7
        #expect(buffer.bytes[buffer.bytes.count - 1] == 7)
        #expect(WeightCopyBuffer(byteCount: 0) == nil)
    }
}
