import Testing

@testable import Engine

/// Pre-tokenizer rules that the reference files do not reach: llama.cpp's `default` cascade,
/// unassigned code points, Llama 3's `ignore_merges` and BOS defaults. Expected words follow
/// from the patterns as llama.cpp documents them in `llama-vocab.cpp` and `unicode.cpp`.
@Suite struct PreTokenizerFamilyTests {
    static func words(_ text: String, _ pre: PreTokenizer) -> [String] {
        let scalars = text.unicodeScalars.map(\.value)
        var ranges: [Range<Int>] = []
        scalars.withUnsafeBufferPointer { pre.split($0, into: &ranges) }
        return ranges.map { range in String(String.UnicodeScalarView(scalars[range].map { Unicode.Scalar($0)! })) }
    }

    @Test func defaultCutsPunctuationThenGPT2ThenNumbersThenDigitTriples() {
        // Punctuation runs come out first, so " ==>" does not keep its space as in GPT-2.
        #expect(Self.words("x ==> y", .default) == ["x", " ", "==>", " y"])
        #expect(Self.words("x ==> y", .gpt2) == ["x", " ==>", " y"])
        // GPT-2 keeps " 12345" together; \p{N}+ cuts the space off; triples split the digits.
        #expect(Self.words("a 12345", .default) == ["a", " ", "123", "45"])
        // The backtick is a symbol outside the punctuation class: GPT-2 rules apply to it.
        #expect(Self.words("a `b`", .default) == ["a", " `", "b", "`"])
        // Non-ASCII punctuation (P*) is cut out; a currency sign (Sc) is not.
        #expect(Self.words("«€5»", .default) == ["«", "€", "5", "»"])
        #expect(Self.words("don't", .default) == ["don", "'", "t"])
    }

    @Test func unassignedCodePointsJoinPunctuationRunsAsInLlamaCpp() {
        let unassigned = "\u{0378}\u{0378}"
        #expect(Self.words("a\(unassigned)!b", .gpt2) == ["a", "\(unassigned)!", "b"])
        #expect(Self.words("a\(unassigned)!b", .llama3) == ["a", "\(unassigned)!", "b"])
        #expect(Self.words("a \(unassigned)", .qwen2) == ["a", " \(unassigned)"])
    }

    @Test func llama3TakesWholeWordTokensWithoutMergingAndAddsBOS() throws {
        // "abc" is a token no merge reaches: Llama 3 (ignore_merges) takes it whole, GPT-2 merges.
        let tokens = ["a", "b", "c", "ab", "abc", "<s>"]
        let types: [Int32] = [1, 1, 1, 1, 1, 3]
        func tokenizer(_ pre: String, addBOS: Bool? = nil) throws -> Tokenizer {
            try Tokenizer(
                tokens: tokens, merges: ["a b"], tokenTypes: types, bosID: 5, eosID: nil, preTokenizer: pre,
                addBOS: addBOS)
        }
        #expect(try tokenizer("llama-bpe").encode("abc") == [4])
        #expect(try tokenizer("gpt2").encode("abc") == [3, 2])
        #expect(try tokenizer("llama-bpe").addsBOS)
        #expect(try !tokenizer("llama-bpe", addBOS: false).addsBOS)
        #expect(try !tokenizer("qwen2").addsBOS)
        #expect(try tokenizer("qwen2", addBOS: true).addsBOS)
    }

    @Test func llama3EndOfTurnEndsGeneration() throws {
        let tokens = ["a", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>"]
        let tokenizer = try Tokenizer(
            tokens: tokens, merges: [], tokenTypes: [1, 3, 3, 3, 3], bosID: 1, eosID: 2, preTokenizer: "llama-bpe")
        #expect(tokenizer.endOfGenerationIDs == [2, 3])
        #expect(tokenizer.encode("<|eot_id|>a").allSatisfy { !tokenizer.isControl($0) })
        #expect(tokenizer.encode("<|eot_id|>a", parseSpecial: true) == [3, 0])
    }
}
