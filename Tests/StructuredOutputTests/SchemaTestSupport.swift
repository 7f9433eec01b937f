import Engine
import Foundation
import Testing

@testable import StructuredOutput

/// Compiles formats and checks byte strings against them with the Engine's matcher.
enum SchemaCheck {
    static func matcher(_ format: StructuredFormat) throws -> GrammarMatcher {
        GrammarMatcher(grammar: try format.compiledGrammar())
    }

    static func schema(_ json: String) throws -> StructuredFormat {
        .jsonSchema(try JSONParser.parse(json))
    }

    /// Whether `text` is a complete match.
    static func accepts(_ m: GrammarMatcher, _ text: String) -> Bool {
        m.reset()
        return m.accept(bytes: Array(text.utf8)) && m.canEnd
    }

    /// Expects the JSON Schema `schema` to accept each of `good` and refuse each of `bad`
    /// (failures are reported at the caller's line).
    static func check(
        _ schema: String, accepts good: [String], rejects bad: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let m = try matcher(try self.schema(schema))
        for g in good {
            #expect(accepts(m, g), "\(schema) should accept \(g.prefix(80))", sourceLocation: sourceLocation)
        }
        for b in bad {
            #expect(!accepts(m, b), "\(schema) should reject \(b.prefix(80))", sourceLocation: sourceLocation)
        }
    }

    /// Every string of at most `length` characters from `alphabet` (the empty one included).
    static func strings(over alphabet: [String], upTo length: Int) -> [String] {
        var out = [""]
        var last = [""]
        for _ in 0..<length {
            last = last.flatMap { s in alphabet.map { s + $0 } }
            out += last
        }
        return out
    }

    /// Brute force: for each value, the grammar of `schema` accepts its compact text exactly
    /// when `SchemaValidator` finds it valid (failures are reported at the caller's line, at
    /// most 10 per schema).
    static func agree(
        _ schema: String, on values: [JSONValue], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let parsed = try JSONParser.parse(schema)
        let m = try matcher(.jsonSchema(parsed))
        let validator = SchemaValidator(root: parsed)
        var failures = 0
        for v in values where failures < 10 {
            let valid = validator.errors(v, parsed).isEmpty
            if accepts(m, v.compactText) != valid {
                failures += 1
                Issue.record(
                    "\(schema): \(v.compactText) is \(valid ? "valid but refused" : "invalid but accepted")",
                    sourceLocation: sourceLocation)
            }
        }
    }

    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The default model's tokenizer (the test fails when the model file is missing).
    static let tokenizer: Result<Tokenizer, Error> = Result {
        let path = packageRoot.appendingPathComponent("models/SmolLM2-135M-Instruct.Q4_1.gguf").path
        return try Tokenizer(gguf: GGUFFile(path: path))
    }
}
