import Foundation
import GenerationVocabulary

/// `$ref`: resolving local pointers, and the recursion depth bound.
///
/// Why a bound: under a recursive schema (a tree, a comment thread) a small model decoding
/// greedily nests one more level at every chance and never closes, until `max_tokens` cuts the
/// answer with no validated value. A context-free grammar cannot count nesting, so the compiler
/// unrolls it: each recursive reference is compiled once per depth (`pointer@depth`), and past
/// `StructuredBounds.maxRecursionDepth` it compiles to nothing, which the grammar compiler
/// prunes, leaving only what ends the recursion (the optional member left out, the array empty).
extension JSONSchemaCompiler {
    /// The target of a local `$ref` (`#`, `#/$defs/x`, `#/definitions/x`, any JSON pointer into
    /// this schema), given a rule of its own per recursion depth so recursive schemas work.
    mutating func reference(_ ref: JSONValue, path: String) throws(StructuredOutputError) -> GrammarExpression {
        guard case .string(let pointer) = ref else { throw .invalidSchema(path: path, message: "must be a string") }
        let level = depth + (recursive.contains(pointer) ? 1 : 0)
        if level > StructuredBounds.maxRecursionDepth {
            cuts.append(path)
            return .choice([])
        }
        let key = "\(pointer)@\(level)"
        if let name = refRules[key] { return .rule(name) }
        let target = try resolve(pointer, path: path)
        let name = freshName("ref")
        refRules[key] = name
        rules[name] = .empty  // placeholder while compiling
        let outer = depth
        depth = level
        defer { depth = outer }
        // The whole schema (`#`) keeps the root's paths (`$.…`) in errors.
        let inner = pointer == "#" ? "$" : pointer
        rules[name] = try compile(target, path: inner)
        return .rule(name)
    }

    /// The pointers whose target can come back to the same pointer through the `$ref`s in its
    /// subschemas: only these count towards the depth (a `$defs` entry used in many places
    /// without recursion is not bounded). Unresolvable pointers are left to `reference` to report.
    func recursivePointers() -> Set<String> {
        var edges: [String: [String]] = [:]
        var pending = Self.references(in: root)
        while let p = pending.popLast() {
            guard edges[p] == nil else { continue }
            let target = try? resolve(p, path: "$")
            let next = target.map(Self.references(in:)) ?? []
            edges[p] = next
            pending += next
        }
        var out: Set<String> = []
        for start in edges.keys {
            var seen: Set<String> = []
            var stack = edges[start] ?? []
            while let p = stack.popLast() {
                if p == start {
                    out.insert(start)
                    break
                }
                if seen.insert(p).inserted { stack += edges[p] ?? [] }
            }
        }
        return out
    }

    /// The `$ref` pointers in a schema's own subschemas (not in `$defs`, which are reached only
    /// through a reference, nor in `enum`, `const` or annotations, which are data, nor in `not`,
    /// whose subschema is read, never compiled).
    static func references(in schema: JSONValue) -> [String] {
        guard schema.objectMembers != nil else { return [] }
        var out: [String] = []
        if case .string(let p)? = schema["$ref"] { out.append(p) }
        for (path, s) in subschemas(of: schema, path: "", definitions: false) where path != ".not" {
            out += references(in: s)
        }
        return out
    }

    /// The subschemas of a schema where the compiler reads them, with their paths (and the
    /// entries of `$defs` and `definitions` with `definitions`).
    static func subschemas(of schema: JSONValue, path: String, definitions: Bool) -> [(path: String, schema: JSONValue)]
    {
        guard schema.objectMembers != nil else { return [] }
        var out: [(path: String, schema: JSONValue)] = []
        for key in ["items", "additionalProperties", "additionalItems", "not"] {
            if case .array(let list)? = schema[key] {
                out += list.enumerated().map { ("\(path).\(key)[\($0)]", $1) }
            } else if let s = schema[key] {
                out.append(("\(path).\(key)", s))
            }
        }
        for key in ["prefixItems", "anyOf", "oneOf", "allOf"] {
            if case .array(let list)? = schema[key] { out += list.enumerated().map { ("\(path).\(key)[\($0)]", $1) } }
        }
        for m in schema["properties"]?.objectMembers ?? [] { out.append(("\(path).properties.\(m.key)", m.value)) }
        if definitions {
            for key in ["$defs", "definitions"] {
                for m in schema[key]?.objectMembers ?? [] { out.append(("\(path).\(key).\(m.key)", m.value)) }
            }
        }
        return out
    }

    /// A subschema with an `$id` (draft 4: `id`) that is not a bare fragment is a resource of
    /// its own, and a `#…` reference inside it points into that resource, not into the whole
    /// schema: resolved against the root, it would reach something else. Such a schema is
    /// refused naming the identifier (an `$id` at the root, or with no local reference inside,
    /// changes nothing and is ignored, as annotations are).
    func checkEmbeddedResources() throws(StructuredOutputError) {
        func hasLocalReference(_ s: JSONValue) -> Bool {
            if case .string(let p)? = s["$ref"], p.hasPrefix("#") { return true }
            return Self.subschemas(of: s, path: "", definitions: true).contains { hasLocalReference($0.schema) }
        }
        func walk(_ s: JSONValue, path: String, isRoot: Bool) throws(StructuredOutputError) {
            for key in ["$id", "id"] where !isRoot {
                if case .string(let id)? = s[key], !id.hasPrefix("#"), hasLocalReference(s) {
                    throw .unsupportedKeyword(
                        keyword: key, path: "\(path) (a resource of its own: its '#' references point into it)")
                }
            }
            for (p, sub) in Self.subschemas(of: s, path: path, definitions: true) {
                try walk(sub, path: p, isRoot: false)
            }
        }
        try walk(root, path: "$", isRoot: true)
    }

    /// A schema whose recursion can never end (each instance requires one more level, as
    /// `{"properties": {"next": {"$ref": "#"}}, "required": ["next"]}`) has no finite instance:
    /// with the recursion cut at the bound its grammar matches nothing. That is refused, naming
    /// where the reference is, rather than compiled to a constraint no output can meet.
    func checkRecursionEnds() throws(StructuredOutputError) {
        guard let cut = cuts.first, !Self.productiveRules(rules).contains("root") else { return }
        throw .invalidSchema(
            path: cut,
            message: "this recursive $ref can never end: every instance requires another level "
                + "(make the member optional, allow an empty array, or add an anyOf branch without it)")
    }

    /// The rules that match at least one string, to a fixed point.
    static func productiveRules(_ rules: [String: GrammarExpression]) -> Set<String> {
        var out: Set<String> = []
        func matches(_ e: GrammarExpression) -> Bool {
            switch e {
            case .literal: true
            case .byteSet(let ranges): !ranges.isEmpty
            case .characters(let ranges, let negated): negated || !ranges.isEmpty
            case .sequence(let parts): parts.allSatisfy(matches)
            case .choice(let options): options.contains(where: matches)
            case .repetition(let inner, let minimum, _): minimum == 0 || matches(inner)
            case .rule(let name): out.contains(name)
            }
        }
        var changed = true
        while changed {
            changed = false
            for (name, e) in rules where !out.contains(name) && matches(e) {
                out.insert(name)
                changed = true
            }
        }
        return out
    }

    func resolve(_ pointer: String, path: String) throws(StructuredOutputError) -> JSONValue {
        guard pointer.hasPrefix("#") else {
            throw .unsupportedKeyword(keyword: "$ref", path: "\(path) (only local references '#...' are supported)")
        }
        var node = root
        let tail = pointer.dropFirst()
        guard !tail.isEmpty else { return node }
        guard tail.hasPrefix("/") else { throw .invalidSchema(path: path, message: "not a JSON pointer: \(pointer)") }
        for raw in tail.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = raw.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch node {
            case .object:
                guard let next = node[token] else {
                    throw .invalidSchema(path: path, message: "'\(pointer)' does not exist")
                }
                node = next
            case .array(let items):
                guard let i = Int(token), items.indices.contains(i) else {
                    throw .invalidSchema(path: path, message: "'\(pointer)' does not exist")
                }
                node = items[i]
            default:
                throw .invalidSchema(path: path, message: "'\(pointer)' does not exist")
            }
        }
        return node
    }

    /// The schema itself, or the target of its `$ref` (for merging).
    func resolved(_ schema: JSONValue, path: String, depth: Int = 0) throws(StructuredOutputError) -> JSONValue {
        guard depth < 32 else { throw .invalidSchema(path: path, message: "$ref chain too deep") }
        if case .string(let pointer)? = schema["$ref"] {
            return try resolved(try resolve(pointer, path: path), path: path, depth: depth + 1)
        }
        return schema
    }
}
