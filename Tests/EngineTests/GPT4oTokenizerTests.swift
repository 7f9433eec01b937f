import Foundation
import Testing

@testable import Engine

/// The `gpt-4o` pre-tokenizer (gpt-oss's) on `tiny/tiny-gpt4o-vocab.gguf` (the default model's
/// vocabulary and merges under `tokenizer.ggml.pre = gpt-4o`) against llama.cpp's tokenizations
/// in `tiny/tiny-gpt4o.json` (scripts/llama-cpp-tokenize.cpp; strings in scripts/gpt4o-strings.json:
/// capitals before lower case, contractions in any case, letters beyond ASCII, '/' after line
/// breaks, other scripts' digits and spaces).
@Suite struct GPT4oTokenizerTests {
    static func tokenizer() throws -> Tokenizer {
        let url = TestFixtures.referenceRoot.appendingPathComponent("tiny/tiny-gpt4o-vocab.gguf")
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw FixtureError("tiny vocabulary missing at \(url.path)")
        }
        return try Tokenizer(gguf: GGUFFile(path: url.path))
    }

    @Test func everyTokenizationMatchesLlamaCpp() throws {
        let tokenizer = try Self.tokenizer()
        let cases = try TokenizerFixtures.cases("tiny/tiny-gpt4o.json", "tokenize")
        #expect(cases.count >= 30)
        for entry in cases {
            let text = try TokenizerFixtures.string(entry["text"], "text")
            let expected = try TokenizerTestSupport.ids(entry["ids"])
            #expect(tokenizer.encode(text) == expected, "\(text.debugDescription)")
            let detokenized = try TokenizerFixtures.string(entry["detokenized"], "detokenized")
            #expect(tokenizer.decode(expected) == detokenized, "\(text.debugDescription)")
        }
    }

    /// Words as the pattern defines them (worked out from the regex by hand).
    @Test func splitsAsThePatternDefines() {
        func words(_ text: String) -> [String] {
            let scalars = text.unicodeScalars.map(\.value)
            var ranges: [Range<Int>] = []
            scalars.withUnsafeBufferPointer { PreTokenizer.gpt4o.split($0, into: &ranges) }
            return ranges.map { range in String(String.UnicodeScalarView(scalars[range].map { Unicode.Scalar($0)! })) }
        }
        #expect(PreTokenizer(name: "gpt-4o") == .gpt4o)
        #expect(words("HelloWorld camelCaseWord") == ["Hello", "World", " camel", "Case", "Word"])
        #expect(words("ÉCOLE française") == ["É", "COLE", " française"])
        #expect(words("DON'T we'Re") == ["DON'T", " we'Re"])
        #expect(words("a+b/\n/c") == ["a", "+b", "/\n/", "c"])
        #expect(words("12345 XMLHttp") == ["123", "45", " XMLHttp"])
        #expect(words("  hi  ") == [" ", " hi", "  "])
        #expect(words("'s alone") == ["'s", " alone"])
    }
}
