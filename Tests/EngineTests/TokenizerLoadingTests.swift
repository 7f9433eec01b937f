import Foundation
import Testing

@testable import Engine

/// `Tokenizer(gguf:)` on small GGUF files written by the test.
@Suite struct TokenizerLoadingTests {
    static func gguf(model: String, pre: String?) throws -> GGUFFile {
        var writer = GGUFWriter()
        writer.add("general.architecture", .string("llama"))
        writer.add("tokenizer.ggml.model", .string(model))
        if let pre { writer.add("tokenizer.ggml.pre", .string(pre)) }
        writer.add("tokenizer.ggml.tokens", .array(["a", "b", "ab", "<|im_end|>"].map { .string($0) }))
        writer.add("tokenizer.ggml.merges", .array([.string("a b")]))
        writer.add("tokenizer.ggml.token_type", .array([1, 1, 1, 3].map { .int32($0) }))
        writer.add("tokenizer.ggml.eos_token_id", .uint32(3))
        writer.add("tokenizer.ggml.eot_token_id", .uint32(0))
        let path = TestFixtures.temporaryPath("tokenizer.gguf")
        try writer.write(to: path)
        return try GGUFFile(path: path)
    }

    @Test func loadsABytelevelBPEVocabulary() throws {
        let tokenizer = try Tokenizer(gguf: Self.gguf(model: "gpt2", pre: "smollm"))
        #expect(tokenizer.vocabularySize == 4)
        #expect(tokenizer.encode("ab") == [2])
        #expect(tokenizer.eosID == 3 && tokenizer.bosID == nil)
        #expect(tokenizer.endOfGenerationIDs == [0, 3])
    }

    @Test func rejectsOtherTokenizerModels() throws {
        let file = try Self.gguf(model: "t5", pre: nil)
        #expect(throws: TokenizerError.unsupportedModel("t5")) { try Tokenizer(gguf: file) }
        #expect("\(TokenizerError.unsupportedModel("t5"))".contains("SentencePiece ('llama')"))
    }

    @Test func rejectsUnknownOrMissingPreTokenizers() throws {
        #expect(throws: TokenizerError.unknownPreTokenizer("falcon")) {
            try Tokenizer(gguf: Self.gguf(model: "gpt2", pre: "falcon"))
        }
        #expect("\(TokenizerError.unknownPreTokenizer("falcon"))".contains("llama-bpe, llama3, llama-v3, qwen2"))
        // A missing pre-tokenizer is llama.cpp's "default".
        #expect(try Tokenizer(gguf: Self.gguf(model: "gpt2", pre: nil)).encode("ab") == [2])
    }
}
