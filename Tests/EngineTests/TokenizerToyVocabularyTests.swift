import Testing

@testable import Engine

/// Merge ranks, byte fallback and special tokens on a vocabulary built here, without the model.
@Suite struct TokenizerToyVocabularyTests {
    /// Tokens: the single bytes used below, some merged tokens, and two special tokens.
    static func toyTokenizer(merges: [String] = ["a b", "b c", "ab c", "Ġ a", "Ġa bc"]) throws -> Tokenizer {
        let singles = ["a", "b", "c", "d", "Ġ", "!", "1", "2"]
        let merged = ["ab", "bc", "abc", "Ġa", "Ġabc"]
        let specials = ["<s>", "</s>", "<extra>"]
        let tokens = singles + merged + specials
        let types = [Int32](repeating: 1, count: singles.count + merged.count) + [3, 3, 4]
        return try Tokenizer(
            tokens: tokens, merges: merges, tokenTypes: types, bosID: 13, eosID: 14, preTokenizer: "smollm")
    }

    @Test func lowerRankMergesFirst() throws {
        // "abc": "a b" (rank 0) beats "b c" (rank 1), then "ab c" gives "abc".
        let tokenizer = try Self.toyTokenizer()
        #expect(tokenizer.encode("abc") == [10])
        #expect(tokenizer.encode("ab") == [8])
        #expect(tokenizer.encode("bc") == [9])
        // " abc": "a b" outranks "Ġ a", so "Ġa" never forms and the token "Ġabc" is not reached.
        #expect(tokenizer.encode(" abc") == [4, 10])
        #expect(tokenizer.encode(" a") == [11])
    }

    @Test func rankOrderDecidesTheSplit() throws {
        // With "b c" ranked first, "abc" becomes "a" + "bc" and no rule joins them.
        let tokenizer = try Self.toyTokenizer(merges: ["b c", "a b", "ab c", "Ġ a", "Ġa bc"])
        #expect(tokenizer.encode("abc") == [0, 9])
        // Now "Ġ a" comes before anything joins "a": " abc" reaches "Ġabc".
        #expect(tokenizer.encode(" abc") == [12])
        #expect(tokenizer.encode("abab") == [8, 8])
    }

    @Test func equalRanksMergeLeftmostFirst() throws {
        let tokens = ["a", "aa"]
        let leftmost = try Tokenizer(
            tokens: tokens, merges: ["a a"], tokenTypes: [1, 1], bosID: nil, eosID: nil, preTokenizer: "gpt-2")
        // "aaa" → "aa" + "a", not "a" + "aa".
        #expect(leftmost.encode("aaa") == [1, 0])
        #expect(leftmost.encode("aaaa") == [1, 1])
    }

    @Test func mergedStringsThatAreNotTokensFallBackToBytes() throws {
        // "c d" merges to "cd", which is not a token: it is spelled with "c" and "d".
        let tokenizer = try Self.toyTokenizer(merges: ["c d"])
        #expect(tokenizer.encode("cd") == [2, 3])
    }

    @Test func digitsAreSplitAndDecodeRoundTrips() throws {
        let tokenizer = try Self.toyTokenizer()
        #expect(tokenizer.encode("12") == [6, 7])
        #expect(tokenizer.encode("abc!") == [10, 5])
        #expect(tokenizer.decode(tokenizer.encode(" abc ab!12")) == " abc ab!12")
        #expect(tokenizer.tokenBytes(12) == Array(" abc".utf8))
    }

    @Test func specialTokensMatchOnlyWhenParsingThem() throws {
        let tokenizer = try Self.toyTokenizer()
        #expect(tokenizer.encode("<s>ab</s>", parseSpecial: true) == [13, 8, 14])
        #expect(!tokenizer.encode("<s>ab</s>").contains(13))
        #expect(tokenizer.decode([13, 8, 14]) == "ab")
        #expect(tokenizer.decode([13, 8, 14], renderSpecial: true) == "<s>ab</s>")
        #expect(tokenizer.isControl(13) && !tokenizer.isControl(15) && !tokenizer.isControl(8))
        #expect(tokenizer.encode([.special(13), .text("a"), .text("b"), .special(14)]) == [13, 8, 14])
    }

    @Test func userDefinedTokensAlwaysMatchAsInLlamaCpp() throws {
        let tokenizer = try Self.toyTokenizer()
        #expect(tokenizer.encode("ab<extra>") == [8, 15])
        #expect(tokenizer.decode([8, 15]) == "ab<extra>")
    }

    @Test func endOfGenerationIncludesEOS() throws {
        let tokenizer = try Self.toyTokenizer()
        #expect(tokenizer.endOfGenerationIDs == [14])
        #expect(tokenizer.vocabularySize == 16)
        #expect(tokenizer.bosID == 13 && tokenizer.eosID == 14)
    }

    @Test func rejectsUnknownPreTokenizerAndBadVocabularies() {
        #expect(throws: TokenizerError.unknownPreTokenizer("falcon")) {
            try Tokenizer(tokens: ["a"], merges: [], tokenTypes: [1], bosID: nil, eosID: nil, preTokenizer: "falcon")
        }
        #expect(throws: TokenizerError.self) {
            try Tokenizer(
                tokens: ["a"], merges: [], tokenTypes: [1, 1], bosID: nil, eosID: nil, preTokenizer: "smollm")
        }
        #expect(throws: TokenizerError.self) {
            try Tokenizer(tokens: ["a"], merges: [], tokenTypes: [1], bosID: nil, eosID: 5, preTokenizer: "smollm")
        }
        #expect(throws: TokenizerError.self) {
            try Tokenizer(
                tokens: ["a"], merges: ["ab"], tokenTypes: [1], bosID: nil, eosID: nil, preTokenizer: "smollm")
        }
    }

    @Test func preTokenizerSplitsLikeLlamaCpp() throws {
        func words(_ text: String, _ pre: PreTokenizer = .smollm) -> [String] {
            let scalars = text.unicodeScalars.map(\.value)
            var ranges: [Range<Int>] = []
            scalars.withUnsafeBufferPointer { pre.split($0, into: &ranges) }
            return ranges.map { range in String(String.UnicodeScalarView(scalars[range].map { Unicode.Scalar($0)! })) }
        }
        #expect(words("Hello world") == ["Hello", " world"])
        #expect(words("a  b") == ["a", " ", " b"])
        #expect(words("a  ") == ["a", "  "])
        #expect(words("x\n\ny") == ["x", "\n", "\n", "y"])
        #expect(words("don't") == ["don", "'t"])
        #expect(words("it's 42!") == ["it", "'s", " ", "4", "2", "!"])
        #expect(words("it's 42!", .gpt2) == ["it", "'s", " 42", "!"])
        #expect(words("x ==> y") == ["x", " ==>", " y"])
        #expect(words("café") == ["café"])
    }
}
