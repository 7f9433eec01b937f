import Backend
import Engine
import HTTPServer
import StructuredOutput

/// A structured-output request as read from a body: native `options.format`, or OpenAI's
/// `response_format` / `grammar`. The schema is kept as the body wrote it, keys in their order
/// (`OpenAIFields.orderedValue`, from the body's one parse): properties are generated in that order.
struct FormatField: Sendable, Equatable, Codable {
    enum Kind: String, Sendable, Codable {
        case jsonSchema = "json_schema"
        case jsonObject = "json_object"
        case grammar
    }

    var kind: Kind
    var schema: JSONValue?
    var grammar: String?
    /// The field's name in errors (`options.format`, `response_format`, `grammar`).
    var param: String = "format"

    enum CodingKeys: String, CodingKey {
        case kind = "type"
        case schema, grammar
    }

    /// Native `format`: `{"type":"json_schema","schema":{…}}`, `{"type":"json_object"}` or
    /// `{"type":"grammar","grammar":"…"}`.
    static func native(_ f: NativeFields) throws(HTTPError) -> FormatField? {
        guard let o = try f.object("format", allowed: ["type", "schema", "grammar", "name", "strict"]) else {
            return nil
        }
        let param = f.fields.name("format")
        let type = try o.requiredString("type")
        switch type {
        case "json_schema":
            guard let schema = o.fields.orderedValue("schema"), o.fields["schema"] != nil else {
                throw .badRequest("missing field '\(param).schema'", code: .invalidRequest, param: "\(param).schema")
            }
            return FormatField(
                kind: .jsonSchema, schema: schema, param: "\(param).schema")
        case "json_object":
            return FormatField(kind: .jsonObject, param: param)
        case "grammar":
            return FormatField(kind: .grammar, grammar: try o.requiredString("grammar"), param: "\(param).grammar")
        default:
            throw .badRequest(
                "\(param).type must be json_schema, json_object or grammar, got '\(type)'", code: .invalidValue,
                param: "\(param).type")
        }
    }

    /// OpenAI's `response_format` (`text`, `json_object`, `json_schema` with `json_schema.schema`)
    /// and the `grammar` extension (llama.cpp's server has it too); both at once is refused.
    static func openAI(_ f: OpenAIFields) throws(OpenAIError) -> FormatField? {
        var out: FormatField? = nil
        if let rf = try f.object("response_format") {
            let type = try rf.string("type") ?? ""
            switch type {
            case "text": break
            case "json_object": out = FormatField(kind: .jsonObject, param: "response_format")
            case "json_schema":
                guard let js = try rf.object("json_schema") else {
                    throw .invalid(
                        "response_format.json_schema is required", param: "response_format.json_schema",
                        code: .missingRequiredParameter)
                }
                _ = try js.string("name")
                _ = try js.bool("strict")
                guard let schema = js.orderedValue("schema"), js["schema"] != nil else {
                    throw .invalid(
                        "response_format.json_schema.schema is required", param: "response_format.json_schema.schema",
                        code: .missingRequiredParameter)
                }
                out = FormatField(
                    kind: .jsonSchema, schema: schema, param: "response_format.json_schema.schema")
            default:
                throw .invalid(
                    "response_format.type must be text, json_object or json_schema, got '\(type)'",
                    param: "response_format.type")
            }
        }
        if let g = try f.string("grammar") {
            guard out == nil else {
                throw .invalid("grammar and response_format cannot be used together", param: "grammar")
            }
            out = FormatField(kind: .grammar, grammar: g, param: "grammar")
        }
        return out
    }

    /// The format for the structured-output compiler.
    var structuredFormat: StructuredFormat {
        switch kind {
        case .jsonObject: .jsonObject
        case .grammar: .grammar(grammar ?? "")
        case .jsonSchema: .jsonSchema(schema ?? .null)
        }
    }

    /// The constraint for `backend`: a 400 naming the location when the schema or grammar is
    /// invalid or unsupported, or when the backend cannot constrain its output.
    func constraint(backend: any GenerationBackend) throws(HTTPError) -> any GenerationConstraint {
        let format = structuredFormat
        let compiled: CompiledGrammar
        do {
            compiled = try format.compiledGrammar()
        } catch {
            let code: ErrorCode
            switch error {
            case .unsupportedKeyword: code = .unsupportedSchemaKeyword
            case .invalidGrammar, .uncompilable: code = kind == .grammar ? .invalidGrammar : .invalidSchema
            case .invalidJSON, .invalidSchema: code = .invalidSchema
            }
            throw .badRequest("\(param): \(error.description)", code: code, param: param)
        }
        guard let c = backend.makeConstraint(grammar: compiled, identity: format.identity) else {
            throw .badRequest(
                "this model's backend does not support structured output", code: .unsupported, param: param)
        }
        return c
    }
}

extension OpenAIJSON: Encodable {
    package func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}
