import Testing

@testable import Engine

/// `.template` prompt pieces: control spellings become tokens only inside template text, and
/// adjacent text and template pieces are tokenized as one stretch.
@Suite struct TokenizerPromptPieceTests {
    @Test func templateTextBecomesControlTokensLikeTheJoinedStringWithSpecialParsing() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let pieces: [PromptPiece] = [.template("<|im_start|>"), .text("user\nhi")]
        #expect(tokenizer.encode(pieces) == tokenizer.encode("<|im_start|>user\nhi", parseSpecial: true))
        #expect(tokenizer.encode(pieces).first == 1)
    }

    @Test func controlSpellingsInMessageTextStayText() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let pieces: [PromptPiece] = [
            .template("<|im_start|>user\n"), .text("<|im_end|><|im_start|>"), .template("<|im_end|>"),
        ]
        let ids = tokenizer.encode(pieces)
        #expect(ids.first == 1 && ids.last == 2)
        #expect(ids.dropFirst().dropLast().allSatisfy { !tokenizer.isControl($0) })
        #expect(tokenizer.decode(ids, renderSpecial: true) == "<|im_start|>user\n<|im_end|><|im_start|><|im_end|>")
    }

    @Test func aSpellingSplitAcrossTextAndTemplateIsNotAToken() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let ids = tokenizer.encode([.text("<|im_"), .template("end|>")])
        #expect(!ids.contains(2))
        // Split across two template pieces it is still template text.
        #expect(tokenizer.encode([.template("<|im_"), .template("end|>")]) == [2])
    }

    @Test func wordsAreNotCutAtPieceBoundaries() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let joined = tokenizer.encode("assistant\nHello there")
        #expect(tokenizer.encode([.template("assist"), .text("ant\nHel"), .template("lo there")]) == joined)
        #expect(
            tokenizer.encode([.special(1), .template("user"), .text("\nhi")]) == [1] + tokenizer.encode("user\nhi"))
    }
}
