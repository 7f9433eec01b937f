import Foundation

@testable import Engine

/// The Gemma 3 and tiny GGUF tokenizers and their llama.cpp references, loaded once.
enum TokenizerFixtures {
    static var gemmaPath: String {
        TestFixtures.packageRoot.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path
    }

    private static let gemma: Result<Tokenizer, Error> = Result {
        guard FileManager.default.fileExists(atPath: gemmaPath) else {
            throw FixtureError("Gemma 3 model missing at \(gemmaPath): run `make model` (scripts/fetch-gemma.sh)")
        }
        return try Tokenizer(gguf: GGUFFile(path: gemmaPath))
    }

    /// The Gemma 3 270M tokenizer (SentencePiece, 262,144 tokens); throws when the file is missing.
    static func gemmaTokenizer() throws -> Tokenizer {
        try gemma.get()
    }

    /// The tokenizer of `Tests/Fixtures/reference/tiny/tiny-<name>.gguf`.
    static func tinyTokenizer(_ name: String) throws -> Tokenizer {
        let url = TestFixtures.referenceRoot.appendingPathComponent("tiny/tiny-\(name).gguf")
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw FixtureError("tiny model missing at \(url.path)")
        }
        return try Tokenizer(gguf: GGUFFile(path: url.path))
    }

    /// An array of case objects under `key` in a reference file.
    static func cases(_ file: String, _ key: String) throws -> [[String: Any]] {
        guard let cases = try TestFixtures.reference(file)[key] as? [[String: Any]], !cases.isEmpty else {
            throw FixtureError("reference file \(file) has no \(key) cases")
        }
        return cases
    }

    static func string(_ value: Any?, _ what: String) throws -> String {
        guard let text = value as? String else { throw FixtureError("expected a string for \(what)") }
        return text
    }
}
