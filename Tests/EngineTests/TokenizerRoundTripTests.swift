import Testing

@testable import Engine

/// Decoding what was encoded gives the text back, for awkward text the references do not cover.
@Suite struct TokenizerRoundTripTests {
    static let samples = [
        "tabs\tand\r\ncarriage returns\r\n", "  \n\t  mixed   \n\n\n whitespace\u{00A0}\u{3000}end ",
        "e\u{0301}e\u{0301} combining marks", "👨‍👩‍👧‍👦 family ZWJ, 🇯🇵 flag",
        "unassigned \u{0378}\u{0378} and private \u{E000}",
        "control \u{0001}\u{007F}\u{0085} bytes", "Ⅻ roman ½ fractions ٣ arabic-indic digits",
        "'S 'T 'RE uppercase contractions'", "trailing apostrophe'", "<|im_start|> <|im_end|><|endoftext|>",
        String(repeating: "=", count: 3000), String(repeating: " ", count: 1000) + "x",
        "ÀÉÎÕÜ ñ ç ø å ß ẞ", "한국어 텍스트", "Ελληνικά κείμενα", "русский текст", "עִבְרִית",
    ]

    @Test func decodeInvertsEncode() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        for text in Self.samples {
            let ids = tokenizer.encode(text)
            #expect(tokenizer.decode(ids) == text, "\(text.debugDescription)")
            let parsed = tokenizer.encode(text, parseSpecial: true)
            #expect(tokenizer.decode(parsed, renderSpecial: true) == text, "\(text.debugDescription)")
            var streamer = StreamingDetokenizer(tokenizer: tokenizer)
            let streamed = ids.map { streamer.append($0) }.joined()
            #expect(streamed == text, "streamed \(text.debugDescription)")
        }
    }

    @Test func everyTokenIDIsInRange() throws {
        let tokenizer = try TokenizerTestSupport.modelTokenizer()
        for text in Self.samples {
            #expect(tokenizer.encode(text).allSatisfy { $0 >= 0 && Int($0) < tokenizer.vocabularySize })
        }
    }
}
