import Foundation
import Testing

@testable import Engine

/// The `tekken` pre-tokenizer (Mistral Nemo, Ministral 3, Mistral Small 3) against llama.cpp:
/// `Tests/Fixtures/reference/tiny/tekken-tokenizations.json` holds llama.cpp's ids for 24 texts
/// (case changes inside words, capitals and non-ASCII letters, digits, slashes, line breaks,
/// marks, emoji, non-ASCII spaces) with the default model's vocabulary and merges under
/// `tokenizer.ggml.pre = tekken` (`tiny/make_server_tokenizations.py tekken`). The vocabulary is
/// borrowed, so what is compared is where the words are cut and Tekken's `ignore_merges`.
@Suite struct TekkenTokenizerTests {
    static func tekkenTokenizer() throws -> Tokenizer {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let types = try gguf.int32Array("tokenizer.ggml.token_type")
        return try Tokenizer(
            tokens: try gguf.stringArray("tokenizer.ggml.tokens"),
            merges: try gguf.stringArray("tokenizer.ggml.merges"),
            tokenTypes: types, bosID: 1, eosID: 2, preTokenizer: "tekken")
    }

    @Test func encodesLikeLlamaCpp() throws {
        let tokenizer = try Self.tekkenTokenizer()
        let reference = try TestFixtures.reference("tiny/tekken-tokenizations.json")
        #expect(reference["pre"] as? String == "tekken")
        let cases = try #require(reference["cases"] as? [[String: Any]])
        #expect(cases.count == 24)
        for c in cases {
            let text = try #require(c["text"] as? String)
            let expected = try #require(c["ids"] as? [Int]).map { Int32($0) }
            #expect(tokenizer.encode(text) == expected, "\(text.debugDescription)")
            #expect(tokenizer.decode(expected) == text, "\(text.debugDescription) decodes back")
        }
    }

    @Test func splitsCaseRunsAsLlamaCppDoes() {
        func words(_ text: String) -> [String] { PreTokenizerFamilyTests.words(text, .tekken) }
        #expect(words("helloWorld HELLOworld") == ["hello", "World", " HELLOworld"])
        #expect(words("XMLHttpRequest") == ["XMLHttp", "Request"])
        #expect(words("12 a/b//c\n") == ["1", "2", " a", "/b", "//", "c", "\n"])
        // A non-ASCII letter counts as both cases in llama.cpp's collapsed matching, so "É" is a
        // lower-case run of its own here (Hugging Face's pattern keeps "ÉCOLE" whole).
        #expect(words("ÉCOLE") == ["É", "COLE"])
        #expect(words("ÀB") == ["À", "B"])
    }

    @Test func tekkenAddsBOSAndIgnoresMerges() {
        #expect(PreTokenizer(name: "tekken") == .tekken)
        #expect(PreTokenizer.tekken.addsBOSByDefault)
        #expect(PreTokenizer.tekken.ignoresMerges)
    }
}
