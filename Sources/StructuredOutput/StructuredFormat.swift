import Engine
import GenerationVocabulary

/// What shape an answer must have: the three front ends, each compiling to a `Grammar`.
public enum StructuredFormat: Sendable, Hashable {
    /// A JSON Schema (parsed with its key order).
    case jsonSchema(JSONValue)
    /// JSON mode: any JSON object.
    case jsonObject
    /// A GBNF grammar as llama.cpp takes it.
    case grammar(String)

    /// The grammar the answer must match; a typed error with the location when the schema or
    /// grammar is invalid or uses what is not supported.
    public func compile() throws(StructuredOutputError) -> Grammar {
        switch self {
        case .jsonSchema(let schema): return try JSONSchemaCompiler.compile(schema)
        case .jsonObject: return JSONGrammar.anyObject()
        case .grammar(let source): return try GBNFParser.parse(source)
        }
    }

    /// A canonical text of what is allowed (part of the single-flight key).
    public var identity: String {
        switch self {
        case .jsonSchema(let schema): "json_schema:" + schema.compactText
        case .jsonObject: "json_object"
        case .grammar(let source): "grammar:" + source
        }
    }

    /// Whether answers are JSON (their snapshots can carry a parsed value).
    public var producesJSON: Bool {
        if case .grammar = self { return false }
        return true
    }

    /// Parses and compiles down to the matcher's form; grammar errors become `uncompilable`.
    public func compiledGrammar() throws(StructuredOutputError) -> CompiledGrammar {
        let g = try compile()
        do {
            return try CompiledGrammar(g)
        } catch {
            throw .uncompilable(error.description)
        }
    }
}
