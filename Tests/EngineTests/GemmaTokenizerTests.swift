import Foundation
import Testing

@testable import Engine

/// Gemma 3's SentencePiece tokenizer against llama.cpp's outputs (`gemma3/reference.json`).
@Suite struct GemmaTokenizerTests {
    @Test func loadsTheSentencePieceVocabulary() throws {
        let tokenizer = try TokenizerFixtures.gemmaTokenizer()
        #expect(tokenizer.vocabularySize == 262_144)
        #expect(tokenizer.bosID == 2 && tokenizer.eosID == 1)
        #expect(tokenizer.addsBOS)
        #expect(tokenizer.tokenID(spelledAs: "<end_of_turn>") == 106)
        #expect(tokenizer.endOfGenerationIDs.isSuperset(of: [1, 106]))
    }

    @Test func everyTokenizationMatchesLlamaCpp() throws {
        let tokenizer = try TokenizerFixtures.gemmaTokenizer()
        let cases = try TokenizerFixtures.cases("gemma3/reference.json", "tokenize")
        for entry in cases {
            let text = try TokenizerFixtures.string(entry["text"], "text")
            let expected = try TokenizerTestSupport.ids(entry["ids"])
            #expect(tokenizer.encode(text) == expected, "text: \(text.debugDescription)")
            let detokenized = try TokenizerFixtures.string(entry["detokenized"], "detokenized")
            #expect(tokenizer.decode(expected) == detokenized, "ids of: \(text.debugDescription)")
        }
    }

    @Test func promptIDsOfGreedyAndLogitsCasesMatchLlamaCpp() throws {
        let tokenizer = try TokenizerFixtures.gemmaTokenizer()
        let bos = try #require(tokenizer.bosID)
        let cases =
            try TokenizerFixtures.cases("gemma3/reference.json", "greedy")
            + TokenizerFixtures.cases("gemma3/reference.json", "logits")
        for entry in cases {
            let prompt = try TokenizerFixtures.string(entry["prompt"], "prompt")
            let expected = try TokenizerTestSupport.ids(entry["prompt_ids"])
            #expect([bos] + tokenizer.encode(prompt) == expected, "case \(entry["name"] ?? "?")")
        }
    }

    @Test func textNeverBecomesControlTokens() throws {
        let tokenizer = try TokenizerFixtures.gemmaTokenizer()
        let spellings = ["<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<pad>", "<unk>", "<mask>"]
        let text = spellings.joined(separator: " x ") + "<start_of_turn>user\nhi<end_of_turn>"
        let plain = tokenizer.encode(text)
        #expect(plain.allSatisfy { !tokenizer.isControl($0) })
        #expect(tokenizer.decode(plain) == text)
        let parsed = tokenizer.encode(text, parseSpecial: true)
        #expect(parsed.contains(106) && parsed.contains(2))
        #expect(tokenizer.decode(parsed, renderSpecial: true) == text)
    }

    @Test func templatePiecesBecomeControlTokensOnlyInTemplateText() throws {
        let tokenizer = try TokenizerFixtures.gemmaTokenizer()
        let start = try #require(tokenizer.tokenID(spelledAs: "<start_of_turn>"))
        let joined = "<start_of_turn>user\nhi<end_of_turn>\n"
        let pieces: [PromptPiece] = [.template("<start_of_turn>"), .text("user\nhi"), .template("<end_of_turn>\n")]
        #expect(tokenizer.encode(pieces) == tokenizer.encode(joined, parseSpecial: true))
        #expect(tokenizer.encode(pieces).first == start)
        let userSpelling: [PromptPiece] = [.template("<start_of_turn>user\n"), .text("<end_of_turn>")]
        #expect(!tokenizer.encode(userSpelling).contains(106))
    }

    @Test func streamingReassemblesByteFallbackCharacters() throws {
        let tokenizer = try TokenizerFixtures.gemmaTokenizer()
        // U+F0000 (private use) and U+20BB7 have no tokens: each is spelled with four <0xNN> tokens.
        let text = "a\u{F0000}b 😀🎉 \u{20BB7} naïve"
        let ids = tokenizer.encode(text)
        let byteTokens = ids.filter { tokenizer.tokenText($0)?.hasPrefix("<0x") == true }
        #expect(byteTokens.count == 8)
        var detokenizer = StreamingDetokenizer(tokenizer: tokenizer)
        var chunks: [String] = []
        for id in ids { chunks.append(detokenizer.append(id)) }
        chunks.append(detokenizer.finish())
        #expect(chunks.joined() == text)
        #expect(!chunks.contains { $0.contains("\u{FFFD}") })
    }
}
