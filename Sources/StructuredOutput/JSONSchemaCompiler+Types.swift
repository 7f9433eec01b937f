import GenerationVocabulary

extension JSONSchemaCompiler {
    func nonNegativeInt(_ schema: JSONValue, _ key: String, path: String) throws(StructuredOutputError) -> Int? {
        guard let v = schema[key] else { return nil }
        guard case .number(_, let d) = v, d >= 0, d == d.rounded(), d < 1e6 else {
            throw .invalidSchema(path: "\(path).\(key)", message: "must be a non-negative integer")
        }
        return Int(d)
    }

    // MARK: Objects

    /// An object of the schema with none of the names `absent` (a `not: {required: …}`).
    mutating func object(_ schema: JSONValue, path: String, absent: Set<String>) throws(StructuredOutputError)
        -> GrammarExpression
    {
        var properties: [JSONValue.Member] = []
        if let p = schema["properties"] {
            guard let members = p.objectMembers else {
                throw .invalidSchema(path: path + ".properties", message: "must be an object")
            }
            properties = members
        }
        var required: Set<String> = []
        if let r = schema["required"] {
            guard case .array(let names) = r else {
                throw .invalidSchema(path: path + ".required", message: "must be an array of strings")
            }
            for n in names {
                guard case .string(let s) = n else {
                    throw .invalidSchema(path: path + ".required", message: "must be an array of strings")
                }
                required.insert(s)
            }
        }
        // A required name with no schema of its own: any value, placed after the listed ones.
        for name in required.sorted() where !properties.contains(where: { $0.key == name }) {
            properties.append(JSONValue.Member(name, .bool(true)))
        }
        if !required.isDisjoint(with: absent) { return .choice([]) }
        properties.removeAll { absent.contains($0.key) }
        // Extra keys differ from the listed properties and from the names left out.
        let taken = properties.map(\.key) + absent.sorted()
        var items: [(member: GrammarExpression, required: Bool)] = []
        for p in properties {
            let value = try compile(p.value, path: "\(path).properties.\(p.key)")
            items.append(
                (JSONGrammar.member(.text(JSONValue.string(p.key).compactText), value), required.contains(p.key)))
        }
        // Extra members. `false` forbids them; absent beside `properties` also gives none, as
        // OpenAI's and XGrammar's strict modes do: a model invents keys forever otherwise, and an
        // object without extra members still validates. `true`, a schema, or an object schema
        // with neither keyword allow up to `StructuredBounds.maxExtraProperties`.
        var extra: GrammarExpression? = nil
        switch schema["additionalProperties"] {
        case .bool(false)?: extra = nil
        case nil where schema["properties"] != nil: extra = nil
        case nil, .bool(true)?:
            extra = JSONGrammar.member(Self.keyOutside(taken), .rule(JSONGrammar.value))
        case let s?:
            let value = try compile(s, path: path + ".additionalProperties")
            extra = JSONGrammar.member(Self.keyOutside(taken), value)
        }
        // tail(i, first): the members from i on, `first` when none has been written yet.
        let id = freshName("object")
        func name(_ i: Int, _ first: Bool) -> String { "\(id)-\(i)\(first ? "f" : "")" }
        let separator = JSONGrammar.separator
        for i in stride(from: items.count, through: 0, by: -1) {
            for first in [true, false] {
                if i == items.count {
                    if let extra {
                        // After a listed member up to the bound; after none, the first then one fewer.
                        let bound = StructuredBounds.maxExtraProperties
                        let more = GrammarExpression.repetition(
                            .sequence([separator, extra]), minimum: 0, maximum: first ? bound - 1 : bound)
                        rules[name(i, first)] =
                            first ? .optional(.sequence([.rule(JSONGrammar.ws), extra, more])) : more
                    } else {
                        rules[name(i, first)] = .empty
                    }
                    continue
                }
                let take = GrammarExpression.sequence(
                    (first ? [.rule(JSONGrammar.ws)] : [separator]) + [items[i].member, .rule(name(i + 1, false))])
                rules[name(i, first)] = items[i].required ? take : .choice([take, .rule(name(i + 1, first))])
            }
        }
        // Each member brings the whitespace before it: `{ ws }` when empty, never two `ws` in a row.
        return .sequence([.text("{"), .rule(name(0, true)), .rule(JSONGrammar.ws), .text("}")])
    }

    /// A JSON string key (plain characters, no escapes) that is none of `names`, of at most
    /// `StructuredBounds.maxKeyLength` characters.
    static func keyOutside(_ names: [String]) -> GrammarExpression {
        let plain = GrammarExpression.characters([0...0x1F, 0x22...0x22, 0x5C...0x5C], negated: true)
        let words = names.map { Array($0.unicodeScalars.map(\.value)) }
        // Walks the names' trie: at each node, a character no name continues with (then
        // anything), or one that does (then the rest must differ), or the end when no name ends here.
        let length = StructuredBounds.maxKeyLength
        func differ(_ group: [[UInt32]], depth: Int) -> GrammarExpression {
            let live = group.filter { $0.count > depth }
            let ends = live.count < group.count
            var options: [GrammarExpression] = []
            if !ends { options.append(.empty) }
            // At `length` characters the key must end here; names longer than that need no excluding.
            guard depth < length else { return .choice(options) }
            let nexts = Set(live.map { $0[depth] }).sorted()
            var excluded: [ClosedRange<UInt32>] = [0...0x1F, 0x22...0x22, 0x5C...0x5C]
            excluded += nexts.map { $0...$0 }
            options.append(
                .sequence([
                    .characters(excluded, negated: true), .repetition(plain, minimum: 0, maximum: length - depth - 1),
                ]))
            for c in nexts {
                options.append(
                    .sequence([
                        .characters([c...c], negated: false), differ(live.filter { $0[depth] == c }, depth: depth + 1),
                    ]))
            }
            return .choice(options)
        }
        let body = names.isEmpty ? .repetition(plain, minimum: 0, maximum: length) : differ(words, depth: 0)
        return .sequence([.text("\""), body, .text("\"")])
    }

    // MARK: Arrays

    mutating func array(_ schema: JSONValue, path: String) throws(StructuredOutputError) -> GrammarExpression {
        // The elements' schemas: the first ones (`prefixItems`, or `items` as an array, the tuple
        // form of drafts 4 to 2019-09), then `rest` for the others (`items`, or `additionalItems`
        // beside a tuple `items`; nil: no more elements).
        var firstSchemas: [(schema: JSONValue, path: String)] = []
        var restSchema: (schema: JSONValue, path: String)? = (.bool(true), path)
        if case .array(let list)? = schema["items"] {
            if schema["prefixItems"] != nil {
                throw .invalidSchema(path: path + ".items", message: "an array (the tuple form) beside prefixItems")
            }
            firstSchemas = list.enumerated().map { ($1, "\(path).items[\($0)]") }
            restSchema = schema["additionalItems"].map { ($0, path + ".additionalItems") } ?? restSchema
        } else {
            if let p = schema["prefixItems"] {
                guard case .array(let list) = p else {
                    throw .invalidSchema(path: path + ".prefixItems", message: "must be an array")
                }
                firstSchemas = list.enumerated().map { ($1, "\(path).prefixItems[\($0)]") }
            }
            restSchema = schema["items"].map { ($0, path + ".items") } ?? restSchema
        }
        if case .bool(false)? = restSchema?.schema { restSchema = nil }
        let minimum = try nonNegativeInt(schema, "minItems", path: path) ?? 0
        var maximum = try nonNegativeInt(schema, "maxItems", path: path)
        if restSchema == nil { maximum = min(maximum ?? firstSchemas.count, firstSchemas.count) }
        if let maximum, maximum < minimum {
            return .choice([])  // unsatisfiable
        }
        if try uniqueItemsMatter(schema, maximum: maximum, path: path) {
            return try uniqueArray(
                first: firstSchemas.map(\.schema), rest: restSchema, minimum: minimum, maximum: maximum, path: path)
        }
        var prefix: [GrammarExpression] = []
        for s in firstSchemas { prefix.append(try compile(s.schema, path: s.path)) }
        var rest: GrammarExpression? = nil
        if let r = restSchema { rest = try compile(r.schema, path: r.path) }
        let explicit = max(prefix.count, minimum)
        func slot(_ j: Int) -> GrammarExpression? { j < prefix.count ? prefix[j] : rest }
        let separator = JSONGrammar.separator
        // Built from the end: after(j) is what may follow element j - 1.
        var after: GrammarExpression
        if let rest, maximum.map({ $0 > explicit }) ?? true {
            after = .repetition(.sequence([separator, rest]), minimum: 0, maximum: maximum.map { $0 - explicit })
        } else {
            after = .empty
        }
        var j = explicit - 1
        while j >= 1 {
            if let maximum, j >= maximum {
                after = .empty
            } else if let s = slot(j) {
                let take = GrammarExpression.sequence([separator, s, after])
                after = j < minimum ? take : .optional(take)
            } else {
                return .choice([])
            }
            j -= 1
        }
        var elements: GrammarExpression
        if maximum == 0 {
            elements = .empty
        } else if let first = slot(0) {
            let take = GrammarExpression.sequence([.rule(JSONGrammar.ws), first, after])
            elements = minimum >= 1 ? take : .optional(take)
        } else {
            elements = .empty
        }
        if explicit == 0, let rest, maximum != 0 {
            // No explicit slot: the first element, then the repetition (one fewer allowed).
            let more = GrammarExpression.repetition(
                .sequence([separator, rest]), minimum: 0, maximum: maximum.map { $0 - 1 })
            elements = .optional(.sequence([.rule(JSONGrammar.ws), rest, more]))
        }
        return .sequence([.text("["), elements, .rule(JSONGrammar.ws), .text("]")])
    }
}
