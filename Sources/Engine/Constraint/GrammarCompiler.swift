/// Lowers `GrammarExpression`s to `CompiledGrammar`'s flat positions (see there), checking that
/// every rule is defined and none is left-recursive.
struct GrammarCompiler {
    /// One item of a lowered sequence.
    enum Item: Hashable {
        case terminal(Int32)
        case reference(Int32)
    }

    /// The most positions a grammar may have (bounded repetitions expand).
    static let maxPositions = 2_000_000

    let grammar: Grammar
    var ruleIDs: [String: Int32] = [:]
    /// Each rule's alternatives, as item sequences (filled as rules are lowered).
    var bodies: [[[Item]]] = []
    var names: [String] = []
    var setIDs: [[UInt64]: Int32] = [:]
    var sets: [UInt64] = []
    /// Anonymous rules already made for an expression (`x*` used twice is one rule).
    var anonymous: [GrammarExpression: Int32] = [:]
    var itemCount = 0

    init(grammar: Grammar) {
        self.grammar = grammar
    }

    mutating func compile() throws(GrammarError) -> CompiledGrammar {
        guard grammar.rules[grammar.root] != nil else { throw .undefinedRule(grammar.root) }
        let root = try ruleID(grammar.root)
        // Named rules are lowered on first reference; this walks until none is left.
        var next = 0
        while next < bodies.count {
            if bodies[next].isEmpty, let expression = grammar.rules[names[next]] {
                let alternatives = try lowerAlternatives(expression)
                bodies[next] = alternatives
            }
            next += 1
        }
        pruneUnproductive()
        try checkLeftRecursion()
        var out = CompiledGrammar()
        out.sets = sets
        out.ruleNames = names
        out.root = root
        out.distinctObjectKeys = grammar.distinctObjectKeys
        for body in bodies {
            out.ruleStart.append(Int32(out.alternatives.count))
            for alternative in body {
                out.alternatives.append(Int32(out.kinds.count))
                for item in alternative {
                    switch item {
                    case .terminal(let s):
                        out.kinds.append(.terminal)
                        out.arguments.append(s)
                    case .reference(let r):
                        out.kinds.append(.reference)
                        out.arguments.append(r)
                    }
                }
                out.kinds.append(.end)
                out.arguments.append(0)
            }
            out.ruleEnd.append(Int32(out.alternatives.count))
        }
        out.findUnits()
        return out
    }

    /// The id of a named rule; its body is lowered later by `compile`.
    mutating func ruleID(_ name: String) throws(GrammarError) -> Int32 {
        if let id = ruleIDs[name] { return id }
        guard grammar.rules[name] != nil else { throw .undefinedRule(name) }
        let id = Int32(bodies.count)
        ruleIDs[name] = id
        bodies.append([])
        names.append(name)
        return id
    }

    mutating func newRule(_ name: String, _ body: [[Item]]) -> Int32 {
        let id = Int32(bodies.count)
        bodies.append(body)
        names.append(name)
        return id
    }

    mutating func lowerAlternatives(_ e: GrammarExpression) throws(GrammarError) -> [[Item]] {
        if case .choice(let options) = e {
            var out: [[Item]] = []
            for option in options { out.append(try lower(option)) }
            return out
        }
        return [try lower(e)]
    }

    mutating func terminal(_ ranges: [ClosedRange<UInt8>]) -> Item {
        var words = [UInt64](repeating: 0, count: 4)
        for r in ranges {
            for b in r { words[Int(b >> 6)] |= 1 << UInt64(b & 63) }
        }
        if let id = setIDs[words] { return .terminal(id) }
        let id = Int32(sets.count / 4)
        sets += words
        setIDs[words] = id
        return .terminal(id)
    }

    /// A sequence of items matching `e`.
    mutating func lower(_ e: GrammarExpression) throws(GrammarError) -> [Item] {
        itemCount += 1
        guard itemCount < Self.maxPositions else { throw .tooLarge("more than \(Self.maxPositions) positions") }
        switch e {
        case .literal(let bytes):
            itemCount += bytes.count
            return bytes.map { terminal([$0...$0]) }
        case .byteSet(let ranges):
            return [terminal(ranges)]
        case .characters(let ranges, let negated):
            let scalars = negated ? UTF8Ranges.complement(ranges) : UTF8Ranges.normalized(ranges)
            let sequences = UTF8Ranges.sequences(scalars)
            if sequences.allSatisfy({ $0.count == 1 }) {
                return [terminal(sequences.map { $0[0] })]
            }
            return [.reference(anonymousRule(e, name: "chars") { c in sequences.map { $0.map { c.terminal([$0]) } } })]
        case .sequence(let parts):
            var out: [Item] = []
            for part in parts { out += try lower(part) }
            return out
        case .choice(let options):
            if options.count == 1 { return try lower(options[0]) }
            if let id = anonymous[e] { return [.reference(id)] }
            let body = try lowerAlternatives(e)
            let id = newRule("choice", body)
            anonymous[e] = id
            return [.reference(id)]
        case .rule(let name):
            return [.reference(try ruleID(name))]
        case .repetition(let inner, let minimum, let maximum):
            return try lowerRepetition(e, inner, minimum, maximum)
        }
    }

    private mutating func anonymousRule(
        _ e: GrammarExpression, name: String, _ make: (inout GrammarCompiler) -> [[Item]]
    ) -> Int32 {
        if let id = anonymous[e] { return id }
        let body = make(&self)
        let id = newRule(name, body)
        anonymous[e] = id
        return id
    }

    private mutating func lowerRepetition(
        _ e: GrammarExpression, _ inner: GrammarExpression, _ minimum: Int, _ maximum: Int?
    ) throws(GrammarError) -> [Item] {
        guard minimum >= 0, maximum.map({ $0 >= minimum }) ?? true else {
            throw .invalidRepetition("{\(minimum),\(maximum.map(String.init) ?? "")}")
        }
        if let maximum, maximum > 100_000 { throw .tooLarge("a repetition of at most \(maximum)") }
        guard minimum <= 100_000 else { throw .tooLarge("a repetition of at least \(minimum)") }
        // The repeated unit as one item (a rule unless it already is one item).
        let lowered = try lower(inner)
        let unit: [Item]
        if lowered.count == 1 {
            unit = lowered
        } else if let id = anonymous[inner] {
            unit = [.reference(id)]
        } else {
            let id = newRule("group", [lowered])
            anonymous[inner] = id
            unit = [.reference(id)]
        }
        var out: [Item] = []
        for _ in 0..<minimum { out += unit }
        itemCount += minimum
        guard itemCount < Self.maxPositions else { throw .tooLarge("more than \(Self.maxPositions) positions") }
        if let maximum {
            let extra = maximum - minimum
            guard extra > 0 else { return out }
            // O1 ::= x | ε ; Ok ::= x O(k-1) | ε : at most `extra` more, by right recursion.
            let key = GrammarExpression.repetition(inner, minimum: 0, maximum: extra)
            if let id = anonymous[key] { return out + [.reference(id)] }
            var previous: Int32? = nil
            for k in 1...extra {
                let chainKey = GrammarExpression.repetition(inner, minimum: 0, maximum: k)
                if let id = anonymous[chainKey] {
                    previous = id
                    continue
                }
                let id = newRule("optional", [unit + (previous.map { [.reference($0)] } ?? []), []])
                anonymous[chainKey] = id
                previous = id
            }
            itemCount += extra * 2
            guard itemCount < Self.maxPositions else { throw .tooLarge("more than \(Self.maxPositions) positions") }
            return out + [.reference(previous!)]
        }
        // S ::= x S | ε
        let key = GrammarExpression.repetition(inner, minimum: 0, maximum: nil)
        if let id = anonymous[key] { return out + [.reference(id)] }
        let id = Int32(bodies.count)
        bodies.append([unit + [.reference(id)], []])
        names.append("star")
        anonymous[key] = id
        _ = e
        return out + [.reference(id)]
    }

    /// Drops every alternative that refers to a rule matching no string at all (or to an empty byte set: a
    /// rule with no alternative left, such as `false` in a schema or a recursive reference cut at the depth
    /// bound). Why: the matcher follows a stack as long as bytes match, so without this it would
    /// let the output into an alternative it can never complete (a key whose value is
    /// impossible), and the mask would no longer mean "can still end".
    private mutating func pruneUnproductive() {
        var productive = [Bool](repeating: false, count: bodies.count)
        let sets = self.sets
        func complete(_ alternative: [Item]) -> Bool {
            alternative.allSatisfy { item in
                switch item {
                case .reference(let r): productive[Int(r)]
                case .terminal(let set): sets[Int(set) * 4..<Int(set) * 4 + 4].contains { $0 != 0 }
                }
            }
        }
        var changed = true
        while changed {
            changed = false
            for (r, body) in bodies.enumerated() where !productive[r] && body.contains(where: complete) {
                productive[r] = true
                changed = true
            }
        }
        for r in bodies.indices {
            let body = bodies[r]
            if body.contains(where: { !complete($0) }) { bodies[r] = body.filter { complete($0) } }
        }
    }

    /// A rule that can reach itself at its left edge (through nullable prefixes) would make the
    /// matcher expand forever.
    private func checkLeftRecursion() throws(GrammarError) {
        var nullable = [Bool](repeating: false, count: bodies.count)
        var changed = true
        while changed {
            changed = false
            for (r, body) in bodies.enumerated() where !nullable[r] {
                let canBeEmpty = body.contains { alternative in
                    alternative.allSatisfy { item in
                        if case .reference(let s) = item { return nullable[Int(s)] }
                        return false
                    }
                }
                if canBeEmpty {
                    nullable[r] = true
                    changed = true
                }
            }
        }
        // Left-edge edges.
        var edges = [[Int32]](repeating: [], count: bodies.count)
        for (r, body) in bodies.enumerated() {
            for alternative in body {
                for item in alternative {
                    guard case .reference(let s) = item else { break }
                    edges[r].append(s)
                    if !nullable[Int(s)] { break }
                }
            }
        }
        // Depth-first search for a cycle (0 unvisited, 1 on the path, 2 done).
        var color = [UInt8](repeating: 0, count: bodies.count)
        for start in 0..<bodies.count where color[start] == 0 {
            var stack: [(Int, Int)] = [(start, 0)]
            color[start] = 1
            while let (node, index) = stack.last {
                if index < edges[node].count {
                    stack[stack.count - 1].1 += 1
                    let next = Int(edges[node][index])
                    if color[next] == 1 { throw .leftRecursion(names[next]) }
                    if color[next] == 0 {
                        color[next] = 1
                        stack.append((next, 0))
                    }
                } else {
                    color[node] = 2
                    stack.removeLast()
                }
            }
        }
    }
}
