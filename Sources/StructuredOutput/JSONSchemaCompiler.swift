import Foundation
import GenerationVocabulary

/// Compiles a JSON Schema to a grammar whose matches are exactly JSON texts that validate
/// (within the documented subset; see docs/structured-output.md's keyword table). A validation
/// keyword it cannot enforce is an error naming the keyword and its path, never silently
/// skipped; a keyword JSON Schema does not define is an annotation and ignored, as the
/// specification says (`JSONSchemaCompiler+Keywords.swift`).
///
/// Object members come in the order of `properties`; `oneOf` is compiled as `anyOf` (the
/// branches' exclusivity is not enforced); extra keys (`additionalProperties` not false) are
/// plain keys (no escapes) different from every listed property.
public struct JSONSchemaCompiler {
    let root: JSONValue
    var rules: [String: GrammarExpression] = [:]
    /// `$ref` targets already given a rule, by pointer and recursion depth (`pointer@depth`).
    var refRules: [String: String] = [:]
    var counter = 0
    /// The pointers whose target can reach the same pointer again (see `recursivePointers`).
    var recursive: Set<String> = []
    /// How many recursive references enclose the schema being compiled.
    var depth = 0
    /// Where a recursive reference was cut at `StructuredBounds.maxRecursionDepth`.
    var cuts: [String] = []
    /// Rules that match exactly one character of a JSON string (for counting lengths).
    var characterRules: Set<String> = [JSONGrammar.stringChar]
    /// Rules already made for a character outside a set (`characterOutside`), by the set.
    var characterOutsideRules: [[UInt32]: String] = [:]

    /// The grammar for a schema.
    public static func compile(_ schema: JSONValue) throws(StructuredOutputError) -> Grammar {
        var c = JSONSchemaCompiler(root: schema)
        JSONGrammar.addBase(to: &c.rules)
        c.recursive = c.recursivePointers()
        try c.checkEmbeddedResources()
        // A schema that refers to itself (`"$ref": "#"` inside) is the first level of its own
        // recursion, as a `$defs` node referred to from the root is.
        let body =
            c.recursive.contains("#") ? try c.reference(.string("#"), path: "$") : try c.compile(schema, path: "$")
        c.rules["root"] = body
        try c.checkRecursionEnds()
        var grammar = Grammar(root: "root", rules: c.rules)
        grammar.distinctObjectKeys = true
        return grammar
    }

    init(root: JSONValue) {
        self.root = root
    }

    mutating func freshName(_ hint: String) -> String {
        counter += 1
        return "\(hint)-\(counter)"
    }

    // MARK: - Dispatch

    mutating func compile(_ schema: JSONValue, path: String) throws(StructuredOutputError) -> GrammarExpression {
        switch schema {
        case .bool(true): return .rule(JSONGrammar.value)
        case .bool(false): return .choice([])
        case .object(let members):
            if let keyword = Self.refusedKeyword(in: members) {
                throw .unsupportedKeyword(keyword: keyword, path: path)
            }
        default:
            throw .invalidSchema(path: path, message: "a schema must be an object or a boolean")
        }
        if let ref = schema["$ref"] {
            let siblings = Self.validationMembers(schema.objectMembers!).filter { $0.key != "$ref" }
            if let first = siblings.first {
                throw .unsupportedKeyword(keyword: first.key, path: "\(path) (beside $ref)")
            }
            return try reference(ref, path: path + ".$ref")
        }
        if let allOf = schema["allOf"] {
            guard case .array(let parts) = allOf, !parts.isEmpty else {
                throw .invalidSchema(path: path + ".allOf", message: "must be a non-empty array")
            }
            var merged = JSONValue.object(schema.objectMembers!.filter { $0.key != "allOf" })
            for (i, part) in parts.enumerated() {
                merged = try merge(merged, try resolved(part, path: "\(path).allOf[\(i)]"), path: "\(path).allOf[\(i)]")
            }
            return try compile(merged, path: path)
        }
        for keyword in ["anyOf", "oneOf"] {
            guard let options = schema[keyword] else { continue }
            guard case .array(let parts) = options, !parts.isEmpty else {
                throw .invalidSchema(path: "\(path).\(keyword)", message: "must be a non-empty array")
            }
            let rest = JSONValue.object(schema.objectMembers!.filter { $0.key != keyword })
            let hasRest = !Self.validationMembers(rest.objectMembers!).isEmpty
            var choices: [GrammarExpression] = []
            for (i, part) in parts.enumerated() {
                let p = "\(path).\(keyword)[\(i)]"
                let branch = hasRest ? try merge(rest, try resolved(part, path: p), path: p) : part
                choices.append(try compile(branch, path: p))
            }
            return .choice(choices)
        }
        let exclusion = try exclusion(schema, path: path)
        if exclusion.everything { return .choice([]) }
        if let values = try admittedValues(schema, exclusion: exclusion, path: path) {
            return values.count == 1 ? .text(values[0].compactText) : .choice(values.map { .text($0.compactText) })
        }
        return try typed(schema, path: path, exclusion: exclusion)
    }

    /// The schema's types: `type` (a name or a list), else what its keywords imply (none: any value).
    func typeNames(_ schema: JSONValue, path: String) throws(StructuredOutputError) -> [String] {
        switch schema["type"] {
        case .string(let t)?: return [t]
        case .array(let list)?:
            var out: [String] = []
            for t in list {
                guard case .string(let name) = t else {
                    throw .invalidSchema(path: path + ".type", message: "type names must be strings")
                }
                out.append(name)
            }
            return out
        case nil:
            if ["properties", "required", "additionalProperties"].contains(where: { schema[$0] != nil }) {
                return ["object"]
            }
            if ["items", "prefixItems", "minItems", "maxItems", "uniqueItems"].contains(where: { schema[$0] != nil }) {
                return ["array"]
            }
            if ["minLength", "maxLength", "pattern", "format"].contains(where: { schema[$0] != nil }) {
                return ["string"]
            }
            if ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"].contains(where: { schema[$0] != nil }) {
                return ["number"]
            }
            return []
        default:
            throw .invalidSchema(path: path + ".type", message: "must be a string or an array of strings")
        }
    }

    // MARK: - allOf

    /// In `allOf`, a part's `additionalProperties` judges every property its own `properties` do
    /// not name, including those another part adds: merged member by member, the other part's
    /// properties would be let through where the schema rejects them. Such a merge is refused
    /// (the schema as written usually means `unevaluatedProperties`, which is not supported).
    static func checkClosedMerge(
        _ closed: [JSONValue.Member], _ other: [JSONValue.Member], path: String
    ) throws(StructuredOutputError) {
        guard let extra = closed.first(where: { $0.key == "additionalProperties" })?.value, extra != .bool(true)
        else { return }
        let named = Set((closed.first { $0.key == "properties" }?.value.objectMembers ?? []).map(\.key))
        let added = (other.first { $0.key == "properties" }?.value.objectMembers ?? []).map(\.key)
        if let outside = added.first(where: { !named.contains($0) }) {
            throw .unsupportedKeyword(
                keyword: "allOf",
                path: "\(path) (property '\(outside)' is added beside a part whose additionalProperties excludes it)")
        }
    }

    /// The conjunction of two object-level schemas, member by member (`properties` merged,
    /// `required` joined, equal values kept; a conflict is an unsupported `allOf`).
    func merge(_ a: JSONValue, _ b: JSONValue, path: String) throws(StructuredOutputError) -> JSONValue {
        if case .bool(true) = b { return a }
        guard var out = a.objectMembers, let extra = b.objectMembers else {
            throw .unsupportedKeyword(keyword: "allOf", path: "\(path) (only object schemas can be merged)")
        }
        try Self.checkClosedMerge(out, extra, path: path)
        try Self.checkClosedMerge(extra, out, path: path)
        for m in extra {
            guard let i = out.firstIndex(where: { $0.key == m.key }) else {
                out.append(m)
                continue
            }
            let existing = out[i].value
            if existing == m.value || Self.isAnnotation(m.key, in: extra) { continue }
            switch m.key {
            case "properties":
                var props = existing.objectMembers ?? []
                for p in m.value.objectMembers ?? [] {
                    if let j = props.firstIndex(where: { $0.key == p.key }) {
                        props[j].value = try merge(
                            try resolved(props[j].value, path: path), try resolved(p.value, path: path),
                            path: "\(path).properties.\(p.key)")
                    } else {
                        props.append(p)
                    }
                }
                out[i].value = .object(props)
            case "required":
                guard case .array(let x) = existing, case .array(let y) = m.value else {
                    throw .invalidSchema(path: path + ".required", message: "must be an array")
                }
                out[i].value = .array(x + y.filter { !x.contains($0) })
            case "not":
                // Neither A nor B: not (A or B).
                out[i].value = .object([JSONValue.Member("anyOf", .array([existing, m.value]))])
            default:
                throw .unsupportedKeyword(keyword: "allOf", path: "\(path) (conflicting '\(m.key)')")
            }
        }
        return .object(out)
    }
}
