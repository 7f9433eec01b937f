import Foundation
import Testing

@testable import Engine

/// The model's tokenizer, loaded once for all tokenizer and chat-template tests.
enum TokenizerTestSupport {
    private static let loaded: Result<(Tokenizer, String?), Error> = Result {
        let file = try GGUFFile(path: try TestFixtures.requireModel())
        return (try Tokenizer(gguf: file), file.optionalString("tokenizer.chat_template"))
    }

    /// The model's tokenizer; throws (failing the test) when the model file is missing.
    static func modelTokenizer() throws -> Tokenizer {
        try loaded.get().0
    }

    /// The model's `tokenizer.chat_template`.
    static func modelChatTemplate() throws -> String? {
        try loaded.get().1
    }

    /// The `cases` array of a reference file in `Tests/Fixtures/reference/`.
    static func referenceCases(_ file: String) throws -> [[String: Any]] {
        guard let cases = try TestFixtures.reference(file)["cases"] as? [[String: Any]], !cases.isEmpty else {
            throw FixtureError("reference file \(file) has no cases")
        }
        return cases
    }

    static func ids(_ value: Any?) throws -> [Int32] {
        guard let numbers = value as? [NSNumber] else {
            throw FixtureError("expected an array of ids, got \(String(describing: value))")
        }
        return numbers.map { $0.int32Value }
    }

    /// Whether every byte sequence decodes as UTF-8 and encodes back to the same bytes.
    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        String(validating: bytes, as: UTF8.self) != nil
    }
}
