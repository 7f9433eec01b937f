/// Which keywords the compiler reads, which it refuses, and which it ignores: the one place
/// that decides it.
///
/// JSON Schema, in every draft from 4 to 2020-12, gives a keyword it does not define no effect
/// on validation: draft 4 to 7 say such keywords are ignored, 2019-09 and 2020-12 that they
/// are collected as annotations. Schemas in the wild carry many: vendor extensions (`x-…`,
/// `readonly`, `_format`, `faker`), hyper-schema's `links` and `self`, OpenAPI's `example`,
/// draft 4's `id`, tool wrappers' `name` and `strict`. The compiler ignores them as a validator
/// does, along with the annotations JSON Schema does define (`title`, `description`,
/// `default`, `examples`, `deprecated`, `readOnly`, `writeOnly`, `$comment`, `$schema`, `$id`,
/// `$anchor`, `contentMediaType`, `contentEncoding`, `contentSchema`, `$vocabulary`) and the
/// containers `$defs` and `definitions` (read only through a `$ref`).
///
/// What it refuses, with a 400 naming the keyword and the schema's path, is a keyword JSON
/// Schema defines as validation (an assertion or an applicator) that the compiler cannot
/// enforce: accepting it would let through values the schema rejects. Those are listed in
/// `unsupportedValidation`; everything neither there nor in `supported` is an annotation.
///
/// The consequence the specification implies: a misspelled validation keyword (`maxlength`,
/// `additionalproperties`, `requried`) is an unknown keyword, indistinguishable from a vendor
/// one, so it is ignored, by inferd as by every validator, and constrains nothing.
extension JSONSchemaCompiler {
    /// Keywords the compiler implements (each enforced exactly, within the documented subset
    /// and bounds; a form of one it cannot enforce is refused naming it where it is read).
    static let supported: Set<String> = [
        "type", "nullable", "properties", "required", "additionalProperties", "enum", "const", "anyOf", "oneOf",
        "allOf", "not", "$ref", "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
        "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    ]

    /// Validation keywords of JSON Schema (drafts 4 to 2020-12) the compiler cannot enforce:
    /// a schema that uses one where it has an effect is refused, naming it.
    static let unsupportedValidation: Set<String> = [
        // Numbers.
        "multipleOf",
        // Objects.
        "minProperties", "maxProperties", "patternProperties", "propertyNames", "dependencies",
        "dependentRequired", "dependentSchemas", "unevaluatedProperties",
        // Arrays.
        "contains", "minContains", "maxContains", "unevaluatedItems",
        // Conditionals.
        "if", "then", "else",
        // Dynamic references (2019-09's and 2020-12's), resolved at validation time.
        "$recursiveRef", "$dynamicRef",
    ]

    /// Whether the keyword `key` of the schema object `members` has no effect on what
    /// validates: not a keyword the compiler reads nor one it refuses, or one of those that
    /// JSON Schema makes inert without its partner (`then`/`else` without `if`, `if` without
    /// either, `minContains`/`maxContains` without `contains`).
    static func isAnnotation(_ key: String, in members: [JSONValue.Member]) -> Bool {
        if supported.contains(key) { return false }
        guard unsupportedValidation.contains(key) else { return true }
        func has(_ k: String) -> Bool { members.contains { $0.key == k } }
        switch key {
        case "then", "else": return !has("if")
        case "if": return !has("then") && !has("else")
        case "minContains", "maxContains": return !has("contains")
        default: return false
        }
    }

    /// The first keyword of the schema object `members` that JSON Schema defines as
    /// validation, the compiler cannot enforce, and that has an effect there.
    static func refusedKeyword(in members: [JSONValue.Member]) -> String? {
        members.first { unsupportedValidation.contains($0.key) && !isAnnotation($0.key, in: members) }?.key
    }

    /// The members of a schema object that validate (all but its annotations).
    static func validationMembers(_ members: [JSONValue.Member]) -> [JSONValue.Member] {
        members.filter { !isAnnotation($0.key, in: members) }
    }
}
