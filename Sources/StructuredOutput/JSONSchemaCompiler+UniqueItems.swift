import GenerationVocabulary

/// `uniqueItems: true`, enforced exactly where a grammar can hold it:
///
/// - an array that can hold at most one element (`maxItems` ≤ 1, a closed tuple of ≤ 1) is
///   always unique: nothing to do;
/// - an array whose elements all come from one `items` schema that allows finitely many scalar
///   values (`enum`/`const` of strings, numbers, booleans and null, `type: boolean`, `type:
///   null`, an `integer` with `minimum` and `maximum` at most 64 apart) is compiled as a choice
///   of distinct values: one rule per set of values already written (the element after them is
///   one of the others), so at most `maxUniqueSets` sets of at most `maxItems` values.
///   Values equal as JSON (`1` and `1.0` in an `enum`) count as one.
///
/// Any other array with `uniqueItems: true` (elements of any value, strings, objects, a tuple)
/// is refused naming `uniqueItems`: whether an element repeats an earlier one is not
/// context-free, and the masks cannot hold it.
extension JSONSchemaCompiler {
    /// The most sets of already written values a unique array's grammar tracks.
    static let maxUniqueSets = 512

    /// Whether `uniqueItems` is `true` where it constrains (two elements or more possible).
    func uniqueItemsMatter(_ schema: JSONValue, maximum: Int?, path: String) throws(StructuredOutputError) -> Bool {
        switch schema["uniqueItems"] {
        case nil, .bool(false)?: return false
        case .bool(true)?: return maximum.map { $0 > 1 } ?? true
        default: throw .invalidSchema(path: path + ".uniqueItems", message: "must be a boolean")
        }
    }

    mutating func uniqueArray(
        first: [JSONValue], rest: (schema: JSONValue, path: String)?, minimum: Int, maximum: Int?, path: String
    ) throws(StructuredOutputError) -> GrammarExpression {
        func refuse(_ why: String) -> StructuredOutputError {
            .unsupportedKeyword(keyword: "uniqueItems", path: "\(path) (\(why))")
        }
        guard first.isEmpty else { throw refuse("elements of a tuple") }
        guard let rest else { return .text("[]") }  // unreachable: at most zero elements
        guard let classes = try finiteScalars(try resolved(rest.schema, path: rest.path), path: rest.path) else {
            throw refuse(
                "only elements from a finite set of scalars (enum, const, boolean, null, a bounded integer) can be kept distinct"
            )
        }
        let n = classes.count
        guard n < 64 else { throw refuse("more than 63 values") }
        let most = min(maximum ?? n, n)
        if minimum > most { return .choice([]) }
        // Sets of at most `most` of the n values: sum of binomials, stopped past the bound.
        var sets = 0
        var binomial = 1
        for k in 0...most {
            if k > 0 { binomial = binomial * (n - k + 1) / k }
            sets += binomial
            if sets > Self.maxUniqueSets { throw refuse("more than \(Self.maxUniqueSets) sets of values to track") }
        }
        let id = freshName("unique")
        func name(_ set: UInt64) -> String { "\(id)-\(set)" }
        func element(_ j: Int) -> GrammarExpression {
            classes[j].count == 1 ? .text(classes[j][0]) : .choice(classes[j].map { .text($0) })
        }
        // after(S): what may follow once the values of S are written (in any order).
        var pending: [UInt64] = (0..<n).map { UInt64(1) << UInt64($0) }
        var done: Set<UInt64> = []
        while let set = pending.popLast() {
            guard done.insert(set).inserted else { continue }
            let count = set.nonzeroBitCount
            var options: [GrammarExpression] = count >= minimum ? [.empty] : []
            if count < most {
                for j in 0..<n where set & (1 << UInt64(j)) == 0 {
                    let next = set | (1 << UInt64(j))
                    options.append(.sequence([JSONGrammar.separator, element(j), .rule(name(next))]))
                    pending.append(next)
                }
            }
            rules[name(set)] = options.count == 1 ? options[0] : .choice(options)
        }
        let firstElement = GrammarExpression.choice(
            (0..<n).map { .sequence([.rule(JSONGrammar.ws), element($0), .rule(name(1 << UInt64($0)))]) })
        let elements: GrammarExpression = most == 0 ? .empty : minimum == 0 ? .optional(firstElement) : firstElement
        return .sequence([.text("["), elements, .rule(JSONGrammar.ws), .text("]")])
    }

    /// The values `schema` allows when they are finitely many scalars, grouped by JSON equality
    /// (each group: its spellings, compact); nil when they are not (or not known to be).
    func finiteScalars(_ schema: JSONValue, path: String) throws(StructuredOutputError) -> [[String]]? {
        if case .bool(false) = schema { return [] }
        guard let members = schema.objectMembers else { return nil }
        let keys = Set(Self.validationMembers(members).map(\.key))
        var values: [JSONValue] = []
        if keys.contains("enum") || keys.contains("const") {
            guard keys.isSubset(of: ["enum", "const", "type", "nullable", "not"]) else { return nil }
            let exclusion = try exclusion(schema, path: path)
            if !exclusion.everything {
                values = try admittedValues(schema, exclusion: exclusion, path: path) ?? []
            }
        } else {
            let numeric: Set<String> = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
            guard keys.contains("type"), keys.isSubset(of: numeric.union(["type", "nullable"])) else { return nil }
            var types = try typeNames(schema, path: path)
            if case .bool(true)? = schema["nullable"] { types.append("null") }
            for t in types {
                switch t {
                case "boolean": values += [.bool(true), .bool(false)]
                case "null": values.append(.null)
                case "integer":
                    let (lo, hi, _, _) = try bounds(schema, path: path, integer: true)
                    guard let lo, let hi, hi - lo < 64 else { return nil }
                    if lo <= hi { values += (lo...hi).map { .number(String($0), Double($0)) } }
                default: return nil
                }
            }
        }
        var classes: [(value: JSONValue, spellings: [String])] = []
        for v in values {
            switch v {
            case .object, .array: return nil
            default: break
            }
            if let i = classes.firstIndex(where: { Self.jsonEqual($0.value, v) }) {
                if !classes[i].spellings.contains(v.compactText) { classes[i].spellings.append(v.compactText) }
            } else {
                classes.append((v, [v.compactText]))
            }
        }
        return classes.map(\.spellings)
    }
}
