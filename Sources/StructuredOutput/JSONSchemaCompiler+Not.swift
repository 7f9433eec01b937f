import GenerationVocabulary

/// What a `not` leaves out, in the forms the compiler enforces exactly. An instance is valid
/// under `not: S` when `S` rejects it; `S` (a conjunction of keywords) rejects it when one of
/// its keywords does, so only subschemas whose rejection is one of these constraints are read:
///
/// - `{type: T}`: the instance's type is not in `T` (`number` takes `integer` with it);
/// - `{enum: V}`, `{const: c}`, optionally with `type` (the values of `V` of those types): the
///   instance is none of them;
/// - `{required: R}`, optionally with `type`: an object misses a name of `R` (JSON Schema's
///   `required` passes every non-object, so `not: {required: R}` alone also excludes them);
/// - `{anyOf: [S1, …]}` of the above: each `Si` rejects it (the constraints together);
/// - `{}` or `true`: nothing is valid; `false`: no constraint.
///
/// Anything else inside `not` (`minLength`, `pattern`, `properties`, …: the complement of a
/// language the compiler cannot build exactly) is refused naming `not`.
struct Exclusion: Equatable {
    /// Nothing is valid.
    var everything = false
    /// Types the instance cannot have (`integer` alone: a number must not be an integer).
    var types: Set<String> = []
    /// Values the instance cannot be.
    var values: [JSONValue] = []
    /// An object misses at least one name of each group.
    var missing: [[String]] = []

    var isEmpty: Bool { !everything && types.isEmpty && values.isEmpty && missing.isEmpty }

    static let allTypes = ["object", "array", "string", "number", "integer", "boolean", "null"]
}

extension JSONSchemaCompiler {
    /// What the schema's `not` excludes (nothing without one).
    func exclusion(_ schema: JSONValue, path: String) throws(StructuredOutputError) -> Exclusion {
        var e = Exclusion()
        if let not = schema["not"] { try addNegation(of: not, path: path + ".not", to: &e) }
        return e
    }

    /// Adds to `e` the constraint "`raw` rejects the instance".
    func addNegation(of raw: JSONValue, path: String, to e: inout Exclusion) throws(StructuredOutputError) {
        func refuse(_ why: String) -> StructuredOutputError {
            .unsupportedKeyword(keyword: "not", path: "\(path) (\(why))")
        }
        let schema = try resolved(raw, path: path)
        guard let members = schema.objectMembers else {
            guard case .bool(let b) = schema else {
                throw .invalidSchema(path: path, message: "a schema must be an object or a boolean")
            }
            if b { e.everything = true }
            return
        }
        let validating = Self.validationMembers(members)
        let keys = Set(validating.map(\.key))
        if keys.isEmpty {
            e.everything = true  // `{}` accepts every instance: its negation none
            return
        }
        var types = Exclusion.allTypes
        if let t = schema["type"] {
            types = try typeNames(.object([JSONValue.Member("type", t)]), path: path)
            if types.contains("number") && !types.contains("integer") { types.append("integer") }
        }
        switch keys.subtracting(["type"]) {
        case []:
            e.types.formUnion(types)
        case ["enum"], ["const"]:
            let values: [JSONValue]
            if let c = schema["const"] {
                values = [c]
            } else if case .array(let list)? = schema["enum"] {
                values = list
            } else {
                throw .invalidSchema(path: path + ".enum", message: "must be an array")
            }
            e.values += values.filter { v in types.contains { Self.hasType(v, $0) } }
        case ["required"]:
            let list = schema["required"].flatMap { v -> [JSONValue]? in if case .array(let l) = v { l } else { nil } }
            let names = list?.compactMap(\.stringValue) ?? []
            guard let list, names.count == list.count else {
                throw .invalidSchema(path: path + ".required", message: "must be an array of strings")
            }
            // Rejected: a value of another type of `types`, or an object of them missing a name.
            e.types.formUnion(types.filter { $0 != "object" })
            if types.contains("object") {
                if names.isEmpty { e.types.insert("object") } else { e.missing.append(names) }
            }
        case ["anyOf"] where schema["type"] == nil:
            guard case .array(let branches)? = schema["anyOf"], !branches.isEmpty else {
                throw .invalidSchema(path: path + ".anyOf", message: "must be a non-empty array")
            }
            for (i, b) in branches.enumerated() { try addNegation(of: b, path: "\(path).anyOf[\(i)]", to: &e) }
        default:
            throw refuse("only type, enum, const, required and anyOf of those can be negated")
        }
    }

    /// Whether `v` has the JSON Schema type `name` (an integer is a number with no fraction).
    static func hasType(_ v: JSONValue, _ name: String) -> Bool {
        switch (v, name) {
        case (.null, "null"), (.bool, "boolean"), (.string, "string"), (.array, "array"), (.object, "object"),
            (.number, "number"):
            true
        case (.number(_, let d), "integer"): d == d.rounded()
        default: false
        }
    }

    /// JSON equality: numbers by value, strings by code points (not Swift's canonical
    /// equivalence), objects whatever their members' order.
    static func jsonEqual(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.number(_, let x), .number(_, let y)): x == y
        case (.string(let x), .string(let y)): x.unicodeScalars.elementsEqual(y.unicodeScalars)
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { jsonEqual($0, $1) }
        case (.object(let x), .object(let y)):
            x.count == y.count && x.allSatisfy { m in y.contains { $0.key == m.key && jsonEqual($0.value, m.value) } }
        default: a == b
        }
    }

    /// The values of an `enum` (or `const`) that the schema's `type` (with `nullable`) and
    /// `not` both let through; `enum` and `const` bound each other when both are present.
    func admittedValues(_ schema: JSONValue, exclusion: Exclusion, path: String) throws(StructuredOutputError)
        -> [JSONValue]?
    {
        var values: [JSONValue]? = nil
        if let list = schema["enum"] {
            guard case .array(let items) = list, !items.isEmpty else {
                throw .invalidSchema(path: path + ".enum", message: "must be a non-empty array")
            }
            values = items
        }
        if let c = schema["const"] { values = (values ?? [c]).filter { Self.jsonEqual($0, c) } }
        guard var out = values else { return nil }
        if schema["type"] != nil {
            var types = try typeNames(schema, path: path)
            if case .bool(true)? = schema["nullable"] { types.append("null") }
            out = out.filter { v in types.contains { Self.hasType(v, $0) } }
        }
        return out.filter { v in
            !exclusion.values.contains { Self.jsonEqual($0, v) }
                && !exclusion.types.contains { Self.hasType(v, $0) }
                && exclusion.missing.allSatisfy { group in group.contains { v[$0] == nil } || v.objectMembers == nil }
        }
    }

    /// The grammar of the schema's types (as written, as its keywords imply, or every type when
    /// neither), less what `exclusion` leaves out.
    mutating func typed(_ schema: JSONValue, path: String, exclusion: Exclusion) throws(StructuredOutputError)
        -> GrammarExpression
    {
        var types = try typeNames(schema, path: path)
        if case .bool(true) = schema["nullable"] ?? .null, !types.contains("null") { types.append("null") }
        let free = types.isEmpty
        if free && exclusion.isEmpty { return .rule(JSONGrammar.value) }
        if free { types = ["object", "array", "string", "number", "boolean", "null"] }
        let excluded = { (type: String) in exclusion.values.filter { Self.hasType($0, type) } }
        func refuse(_ why: String) -> StructuredOutputError {
            .unsupportedKeyword(keyword: "not", path: "\(path).not (\(why))")
        }
        var choices: [GrammarExpression] = []
        for t in types where !exclusion.types.contains(t) {
            switch t {
            case "object":
                if !excluded("object").isEmpty { throw refuse("an object value cannot be excluded") }
                if free && exclusion.missing.isEmpty {
                    choices.append(.rule(JSONGrammar.object))
                } else {
                    choices.append(try object(schema, path: path, missing: exclusion.missing))
                }
            case "array":
                if !excluded("array").isEmpty { throw refuse("an array value cannot be excluded") }
                choices.append(free ? .rule(JSONGrammar.array) : try array(schema, path: path))
            case "string":
                let words = excluded("string").compactMap(\.stringValue)
                choices.append(
                    free && words.isEmpty ? .rule(JSONGrammar.string) : try string(schema, path: path, excluding: words)
                )
            case "integer":
                let points = excluded("integer").compactMap(\.numberValue).filter { abs($0) < 1e16 }.map { Int64($0) }
                choices.append(try integer(schema, path: path, excluding: points))
            case "number":
                let nonInteger = exclusion.types.contains("integer")
                if excluded("number").contains(where: { !nonInteger || !Self.hasType($0, "integer") }) {
                    throw refuse("a number value cannot be excluded from type number (only from integer)")
                }
                choices.append(
                    free && !nonInteger
                        ? .rule(JSONGrammar.number) : try number(schema, path: path, nonInteger: nonInteger))
            case "boolean":
                let kept = ["true", "false"].filter { b in !exclusion.values.contains(.bool(b == "true")) }
                if !kept.isEmpty { choices.append(.choice(kept.map { .text($0) })) }
            case "null":
                if !exclusion.values.contains(.null) { choices.append(.text("null")) }
            default: throw .invalidSchema(path: path + ".type", message: "unknown type '\(t)'")
            }
        }
        return choices.count == 1 ? choices[0] : .choice(choices)
    }

    /// An object missing at least one name of each group of `missing`: one object grammar per
    /// way of choosing the names left out (minimal sets only), at most 16.
    mutating func object(_ schema: JSONValue, path: String, missing: [[String]]) throws(StructuredOutputError)
        -> GrammarExpression
    {
        var ways: [Set<String>] = [[]]
        for group in missing {
            var next: [Set<String>] = []
            for way in ways {
                if group.contains(where: way.contains) {
                    next.append(way)
                } else {
                    next += group.map { way.union([$0]) }
                }
            }
            // A way that leaves out more than another gives a subset of its objects.
            ways = next.filter { w in !next.contains { $0.count < w.count && $0.isSubset(of: w) } }
            ways = ways.enumerated().filter { i, w in !ways[..<i].contains(w) }.map(\.element)
            if ways.count > 16 {
                throw .unsupportedKeyword(keyword: "not", path: "\(path).not (more than 16 ways to leave out names)")
            }
        }
        var options: [GrammarExpression] = []
        for way in ways { options.append(try object(schema, path: path, absent: way)) }
        return options.count == 1 ? options[0] : .choice(options)
    }
}
