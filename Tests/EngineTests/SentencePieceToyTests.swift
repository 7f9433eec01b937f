import Foundation
import Testing

@testable import Engine

/// SentencePiece merging, byte fallback, the unknown token and the space prefix on a vocabulary
/// written here as a GGUF file.
@Suite struct SentencePieceToyTests {
    /// Ids: 0 <unk>, 1 <s>, 2 </s>, 3 <extra> (user-defined), 4 ▁, 5 a, 6 b, 7 c, 8 ▁a, 9 ab,
    /// 10 bc, 11 ▁ab, 12 <0xC3>, 13 <0xA9>, 14 <0x21>, 15 x.
    static func toy(
        abScore: Float = -1, bcScore: Float = -2, addSpacePrefix: Bool? = nil, addBOS: Bool? = nil,
        specialIDs: Bool = true
    ) throws -> Tokenizer {
        let tokens = [
            "<unk>", "<s>", "</s>", "<extra>", "▁", "a", "b", "c", "▁a", "ab", "bc", "▁ab", "<0xC3>", "<0xA9>",
            "<0x21>", "x",
        ]
        let scores: [Float] = [0, 0, 0, 0, -5, -6, -6, -6, -3, abScore, bcScore, -0.5, 0, 0, 0, -6]
        let types: [Int32] = [2, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6, 6, 1]
        var writer = GGUFWriter()
        writer.add("general.architecture", .string("llama"))
        writer.add("tokenizer.ggml.model", .string("llama"))
        writer.add("tokenizer.ggml.tokens", .array(tokens.map { .string($0) }))
        writer.add("tokenizer.ggml.scores", .array(scores.map { .float32($0) }))
        writer.add("tokenizer.ggml.token_type", .array(types.map { .int32($0) }))
        if specialIDs {
            writer.add("tokenizer.ggml.bos_token_id", .uint32(1))
            writer.add("tokenizer.ggml.eos_token_id", .uint32(2))
            writer.add("tokenizer.ggml.unknown_token_id", .uint32(0))
        }
        if let addSpacePrefix { writer.add("tokenizer.ggml.add_space_prefix", .bool(addSpacePrefix)) }
        if let addBOS { writer.add("tokenizer.ggml.add_bos_token", .bool(addBOS)) }
        let path = TestFixtures.temporaryPath("spm.gguf")
        try writer.write(to: path)
        return try Tokenizer(gguf: GGUFFile(path: path))
    }

    @Test func higherScoresMergeFirst() throws {
        #expect(try Self.toy(abScore: -1, bcScore: -2, addSpacePrefix: false).encode("abc") == [9, 7])
        #expect(try Self.toy(abScore: -2, bcScore: -1, addSpacePrefix: false).encode("abc") == [5, 10])
        // Equal scores: the leftmost pair merges first.
        #expect(try Self.toy(abScore: -1, bcScore: -1, addSpacePrefix: false).encode("abc") == [9, 7])
        // Merging goes on through merged symbols: "ab" forms first, then "▁" + "ab" is "▁ab".
        #expect(try Self.toy(addSpacePrefix: false).encode(" ab") == [11])
        #expect(try Self.toy(addSpacePrefix: false).encode(" abc") == [11, 7])
    }

    @Test func spacePrefixIsAddedAtTheStartAndAfterSpecialTokensWhenAsked() throws {
        let withPrefix = try Self.toy()  // add_space_prefix absent: llama.cpp's default is true
        #expect(withPrefix.encode("a") == [8])
        #expect(withPrefix.encode("<s>a", parseSpecial: true) == [1, 8])
        #expect(withPrefix.encode("<s>a", parseSpecial: false).first == 4)
        #expect(withPrefix.decode([8, 8]) == "a a")
        #expect(withPrefix.decode([5, 8]) == "a a")
        let without = try Self.toy(addSpacePrefix: false)
        #expect(without.encode("a") == [5])
        #expect(without.encode("<s>a", parseSpecial: true) == [1, 5])
        #expect(without.decode([8, 8]) == " a a")
    }

    @Test func charactersWithoutTokensFallBackToBytesOrUnknown() throws {
        let tokenizer = try Self.toy(addSpacePrefix: false)
        #expect(tokenizer.encode("é!") == [12, 13, 14])
        #expect(tokenizer.decode([12, 13, 14]) == "é!")
        // "€" is E2 82 AC: no byte tokens, so each byte becomes the unknown token.
        #expect(tokenizer.encode("x€") == [15, 0, 0, 0])
        #expect(tokenizer.decode([15, 0]) == "x")
    }

    @Test func streamingJoinsByteTokensIntoCharacters() throws {
        let tokenizer = try Self.toy(addSpacePrefix: false)
        var detokenizer = StreamingDetokenizer(tokenizer: tokenizer)
        #expect(detokenizer.append(12) == "")
        #expect(detokenizer.append(13) == "é")
        #expect(detokenizer.append(8) == " a")
        #expect(detokenizer.text == "é a")
    }

    @Test func controlSpellingsStayTextUnlessParsedAndUserDefinedAlwaysMatch() throws {
        let tokenizer = try Self.toy(addSpacePrefix: false)
        let plain = tokenizer.encode("</s>a<extra>")
        #expect(!plain.contains(2) && plain.contains(3))
        #expect(plain.allSatisfy { !tokenizer.isControl($0) })
        #expect(tokenizer.encode("</s>a<extra>", parseSpecial: true) == [2, 5, 3])
        #expect(tokenizer.encode([.template("</s>"), .text("a</s>")]).filter { $0 == 2 }.count == 1)
    }

    @Test func addsBOSFollowsTheFileOrDefaultsToTrue() throws {
        #expect(try Self.toy().addsBOS)
        #expect(try !Self.toy(addBOS: false).addsBOS)
    }

    @Test func missingSpecialIDsTakeLlamaCppsSentencePieceDefaults() throws {
        let tokenizer = try Self.toy(addSpacePrefix: false, specialIDs: false)
        #expect(tokenizer.bosID == 1 && tokenizer.eosID == 2)
        #expect(tokenizer.encode("x€") == [15, 0, 0, 0])
        #expect(tokenizer.endOfGenerationIDs.contains(2))
    }

    @Test func malformedVocabulariesThrowOrDegradeWithoutCrashing() throws {
        #expect(throws: TokenizerError.self) {
            try Tokenizer(sentencePieceTokens: ["a", "b"], scores: [0], tokenTypes: [], bosID: nil, eosID: nil)
        }
        #expect(throws: TokenizerError.self) {
            try Tokenizer(sentencePieceTokens: ["a"], scores: [], tokenTypes: [], bosID: 0, eosID: nil, unknownID: 7)
        }
        #expect(throws: TokenizerError.self) {
            // BOS is asked for (the SentencePiece default) but there is none.
            try Tokenizer(sentencePieceTokens: ["a"], scores: [], tokenTypes: [], bosID: nil, eosID: nil)
        }
        // An empty spelling and a malformed byte token load; text without tokens encodes to nothing.
        let odd = try Tokenizer(
            sentencePieceTokens: ["", "<0xZZ>", "▁"], scores: [], tokenTypes: [1, 6, 1], bosID: 2, eosID: nil,
            addSpacePrefix: false)
        #expect(odd.encode("q r") == [2])
        #expect(odd.decode([0, 1, 2, 99, -1]) == " ")
    }
}
