import Foundation
import Testing

@testable import Engine

/// llama.cpp drops the whitespace after the special tokens of a file whose `general.name` says
/// "phi3" or "phi-3" (their `rstrip` attribute; not after `<unk>`, `<s>` or `<|endoftext|>`), so
/// Phi-3's `<|user|>\n` prompt tokenizes without the newline. Against llama.cpp:
/// `Tests/Fixtures/reference/tiny/phi3-tokenizations.json` holds its ids (special tokens parsed)
/// for 11 texts with the default model's vocabulary plus Phi-3's control tokens
/// (`tiny/make_server_tokenizations.py phi3`).
@Suite struct Phi3TokenizerTests {
    static let extra = ["<unk>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]

    static func tokenizer(name: String) throws -> Tokenizer {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let tokens = try gguf.stringArray("tokenizer.ggml.tokens") + extra
        let types = try gguf.int32Array("tokenizer.ggml.token_type") + [Int32](repeating: 3, count: extra.count)
        var tokenizer = try Tokenizer(
            tokens: tokens, merges: try gguf.stringArray("tokenizer.ggml.merges"), tokenTypes: types, bosID: 1,
            eosID: 2, preTokenizer: "default")
        tokenizer.rightStrippedIDs = Tokenizer.rightStrippedIDs(name: name, table: tokenizer.table)
        return tokenizer
    }

    @Test func dropsWhitespaceAfterSpecialTokensLikeLlamaCpp() throws {
        let reference = try TestFixtures.reference("tiny/phi3-tokenizations.json")
        let tokenizer = try Self.tokenizer(name: try #require(reference["name"] as? String))
        let cases = try #require(reference["cases"] as? [[String: Any]])
        #expect(cases.count == 11)
        for c in cases {
            let text = try #require(c["text"] as? String)
            let expected = try #require(c["ids"] as? [Int]).map { Int32($0) }
            #expect(tokenizer.encode(text, parseSpecial: true) == expected, "\(text.debugDescription)")
        }
    }

    @Test func onlyPhi3NamesStrip() throws {
        let user = try #require(try Self.tokenizer(name: "x").tokenID(spelledAs: "<|user|>"))
        for name in ["Phi 3 Mini", "Llama 3", "tiny"] {
            let tokenizer = try Self.tokenizer(name: name)
            #expect(tokenizer.rightStrippedIDs.isEmpty, "\(name)")
            #expect(tokenizer.encode("<|user|>\nHi", parseSpecial: true).count == 3, "\(name)")
        }
        for name in ["Phi-3-mini-4k-instruct", "PHI3 medium"] {
            let tokenizer = try Self.tokenizer(name: name)
            #expect(tokenizer.rightStrippedIDs.contains(user), "\(name)")
            #expect(tokenizer.encode("<|user|>\nHi", parseSpecial: true).count == 2, "\(name)")
        }
    }
}
