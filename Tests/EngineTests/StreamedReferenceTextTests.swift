import Testing

@testable import Engine

/// llama.cpp's generated ids stream to its generated text, for SentencePiece (Gemma 3: leading
/// spaces of the first token kept, byte tokens joined) and the tiny BPE files.
@Suite struct StreamedReferenceTextTests {
    static func streamed(_ ids: [Int32], _ tokenizer: Tokenizer) -> String {
        var detokenizer = StreamingDetokenizer(tokenizer: tokenizer)
        var text = ""
        for id in ids { text += detokenizer.append(id) }
        return text + detokenizer.finish()
    }

    @Test func gemmaGeneratedIDsStreamToLlamaCppsText() throws {
        let tokenizer = try TokenizerFixtures.gemmaTokenizer()
        for entry in try TokenizerFixtures.cases("gemma3/reference.json", "greedy") {
            let ids = try TokenizerTestSupport.ids(entry["generated_ids"])
            let text = try TokenizerFixtures.string(entry["text"], "text")
            #expect(Self.streamed(ids, tokenizer) == text, "case \(entry["name"] ?? "?")")
            #expect(tokenizer.decode(ids) == text, "case \(entry["name"] ?? "?")")
        }
    }

    @Test(arguments: ["qwen2", "qwen3", "llama3"])
    func tinyGeneratedIDsStreamToLlamaCppsText(name: String) throws {
        let tokenizer = try TokenizerFixtures.tinyTokenizer(name)
        for entry in try TokenizerFixtures.cases("tiny/tiny-\(name).json", "greedy") {
            let ids = try TokenizerTestSupport.ids(entry["generated_ids"])
            let text = try TokenizerFixtures.string(entry["text"], "text")
            #expect(Self.streamed(ids, tokenizer) == text, "\(name) case \(entry["name"] ?? "?")")
        }
    }
}
