@testable import StructuredOutput

/// Removes from a schema, at every level, each keyword that is not a validation keyword
/// (vendor keywords, annotations, identifiers), keeping `$defs` and `definitions` for the
/// `$ref`s that point into them. Written from JSON Schema's list of keywords, not from the
/// compiler's, so that "the grammar is the one of the stripped schema" checks the compiler.
enum WildSchemaStripper {
    static let validation: Set<String> = [
        "type", "nullable", "properties", "required", "additionalProperties", "enum", "const", "anyOf", "oneOf",
        "allOf", "not", "$ref", "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
        "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "$defs", "definitions",
    ]
    /// Keywords whose value is a schema, a list of schemas, or a map of schemas.
    static let single: Set<String> = ["additionalProperties", "additionalItems", "not", "items"]
    static let lists: Set<String> = ["prefixItems", "anyOf", "oneOf", "allOf", "items"]
    static let maps: Set<String> = ["properties", "$defs", "definitions"]

    static func strip(_ schema: JSONValue) -> JSONValue {
        guard case .object(let members) = schema else { return schema }
        return .object(
            members.filter { validation.contains($0.key) }.map { m in
                var m = m
                switch m.value {
                case .array(let list) where lists.contains(m.key): m.value = .array(list.map(strip))
                case .object(let entries) where maps.contains(m.key):
                    m.value = .object(entries.map { JSONValue.Member($0.key, strip($0.value)) })
                case .object where single.contains(m.key): m.value = strip(m.value)
                default: break
                }
                return m
            })
    }
}
