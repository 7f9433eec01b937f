import Foundation
import Testing

@testable import Engine

/// The `qwen2` and `llama-bpe` pre-tokenizers on the tiny GGUFs (SmolLM2's vocabulary) against
/// llama.cpp's outputs in `Tests/Fixtures/reference/tiny/`.
@Suite struct TinyTokenizerTests {
    @Test(arguments: ["qwen2", "qwen3", "llama3"])
    func everyTokenizationMatchesLlamaCpp(name: String) throws {
        let tokenizer = try TokenizerFixtures.tinyTokenizer(name)
        for entry in try TokenizerFixtures.cases("tiny/tiny-\(name).json", "tokenize") {
            let text = try TokenizerFixtures.string(entry["text"], "text")
            let expected = try TokenizerTestSupport.ids(entry["ids"])
            #expect(tokenizer.encode(text) == expected, "\(name): \(text.debugDescription)")
            let detokenized = try TokenizerFixtures.string(entry["detokenized"], "detokenized")
            #expect(tokenizer.decode(expected) == detokenized, "\(name): \(text.debugDescription)")
        }
    }

    @Test(arguments: ["qwen2", "qwen3", "llama3"])
    func promptIDsMatchLlamaCppWithBOSAsTheFileAsks(name: String) throws {
        let tokenizer = try TokenizerFixtures.tinyTokenizer(name)
        #expect(tokenizer.addsBOS == (name == "llama3"))
        let file = "tiny/tiny-\(name).json"
        for entry in try TokenizerFixtures.cases(file, "greedy") + TokenizerFixtures.cases(file, "logits") {
            let prompt = try TokenizerFixtures.string(entry["prompt"], "prompt")
            let expected = try TokenizerTestSupport.ids(entry["prompt_ids"])
            let bos = tokenizer.addsBOS ? [try #require(tokenizer.bosID)] : []
            #expect(bos + tokenizer.encode(prompt) == expected, "\(name): \(prompt.debugDescription)")
        }
    }

    @Test func llama3AndQwen2SplitNumbersDifferently() throws {
        func words(_ text: String, _ pre: PreTokenizer) -> [String] {
            let scalars = text.unicodeScalars.map(\.value)
            var ranges: [Range<Int>] = []
            scalars.withUnsafeBufferPointer { pre.split($0, into: &ranges) }
            return ranges.map { range in String(String.UnicodeScalarView(scalars[range].map { Unicode.Scalar($0)! })) }
        }
        #expect(words("12345 and", .llama3) == ["123", "45", " and"])
        #expect(words("12345 and", .qwen2) == ["1", "2", "3", "4", "5", " and"])
        #expect(words("WE'VE it's", .llama3) == ["WE", "'VE", " it", "'s"])
        #expect(words("x  \n\n y", .llama3) == ["x", "  \n\n", " y"])
        #expect(words("a...\n\nb", .qwen2) == ["a", "...\n\n", "b"])
        #expect(words("$100", .llama3) == ["$", "100"])
        #expect(words("  hi  ", .llama3) == [" ", " hi", "  "])
    }
}
