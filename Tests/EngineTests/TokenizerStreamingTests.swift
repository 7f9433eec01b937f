import Foundation
import Testing

@testable import Engine

/// `StreamingDetokenizer` on the model's tokens for text whose characters span several tokens.
@Suite struct TokenizerStreamingTests {
    static let multiByteCases = ["emoji_skin_tone", "chinese", "japanese", "arabic", "accented_latin"]

    @Test func streamedChunksAreWholeCharactersAndAddUpToTheDecodedText() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        let cases = try TokenizerTestSupport.referenceCases("tokenize.json")
        var sawHeldBackToken = false
        for name in Self.multiByteCases {
            let testCase = try #require(cases.first { ($0["name"] as? String) == name }, "reference case \(name)")
            let text = try #require(testCase["text"] as? String)
            let ids = try TokenizerTestSupport.ids(testCase["ids_parse_special_false"])
            var streamer = StreamingDetokenizer(tokenizer: tokenizer)
            var joined = ""
            var pendingBytes: [UInt8] = []
            for (index, id) in ids.enumerated() {
                let chunk = streamer.append(id)
                let chunkBytes = Array(chunk.utf8)
                #expect(TokenizerTestSupport.isValidUTF8(chunkBytes), "case \(name)")
                #expect(!chunk.contains("\u{FFFD}"), "case \(name): a split character was emitted")
                pendingBytes += tokenizer.tokenBytes(id)
                if TokenizerTestSupport.isValidUTF8(pendingBytes) {
                    // Everything so far is whole characters, so all of it must be out now.
                    pendingBytes = []
                    #expect(streamer.text == tokenizer.decode(Array(ids[...index])), "case \(name) at token \(index)")
                } else if chunk.isEmpty {
                    sawHeldBackToken = true
                }
                joined += chunk
            }
            #expect(joined == tokenizer.decode(ids), "case \(name)")
            #expect(joined == text, "case \(name)")
            #expect(streamer.text == joined, "case \(name)")
        }
        #expect(sawHeldBackToken, "no case had a token ending inside a character")
    }

    @Test func aTokenEndingInsideACharacterOutputsNothingUntilCompleted() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        // "👍" is F0 9F 91 8D: llama.cpp tokenizes it as [F0 9F] [91] [8D] (ids 10813 235 231).
        #expect(tokenizer.tokenBytes(10813) == [0xF0, 0x9F])
        var streamer = StreamingDetokenizer(tokenizer: tokenizer)
        #expect(streamer.append(10813) == "")
        #expect(streamer.append(235) == "")
        #expect(streamer.text == "")
        #expect(streamer.append(231) == "👍")
        #expect(streamer.append(39239) == " thumbs")
        #expect(streamer.text == "👍 thumbs")
    }

    @Test func controlTokensProduceNoText() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        var streamer = StreamingDetokenizer(tokenizer: tokenizer)
        #expect(streamer.append(19556) == "Hello")
        #expect(streamer.append(2) == "")
        #expect(streamer.append(1) == "")
        #expect(streamer.text == "Hello")
    }

    @Test func heldBackBytesThatNeverCompleteBecomeReplacementCharacters() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        var streamer = StreamingDetokenizer(tokenizer: tokenizer)
        #expect(streamer.append(10813) == "")
        // An ASCII token after an unfinished character: the broken bytes cannot complete any more.
        #expect(streamer.append(19556) == "\u{FFFD}Hello")
        #expect(streamer.append(10813) == "")
        #expect(streamer.finish() == "\u{FFFD}")
        #expect(streamer.text == "\u{FFFD}Hello\u{FFFD}")
    }

    @Test func completePrefixLengthHoldsBackOnlyAValidUnfinishedTail() {
        #expect(StreamingDetokenizer.completePrefixLength([]) == 0)
        #expect(StreamingDetokenizer.completePrefixLength([0x41]) == 1)
        #expect(StreamingDetokenizer.completePrefixLength([0x41, 0xE4]) == 1)
        #expect(StreamingDetokenizer.completePrefixLength([0x41, 0xE4, 0xBD]) == 1)
        #expect(StreamingDetokenizer.completePrefixLength([0xE4, 0xBD, 0xA0]) == 3)
        #expect(StreamingDetokenizer.completePrefixLength([0xF0, 0x9F, 0x91]) == 0)
        #expect(StreamingDetokenizer.completePrefixLength([0xF0, 0x9F, 0x91, 0x8D]) == 4)
        // Not a possible start of a character: nothing to wait for.
        #expect(StreamingDetokenizer.completePrefixLength([0x41, 0xE0, 0x80]) == 3)
        #expect(StreamingDetokenizer.completePrefixLength([0x41, 0xFF]) == 2)
        #expect(StreamingDetokenizer.completePrefixLength([0x80, 0x80, 0x80, 0x80]) == 4)
    }
}
