import GenerationVocabulary

/// Grammar rules for "any text (Unicode scalars) that contains none of these words": a small
/// automaton whose states are the prefixes of the words seen last (Aho–Corasick, which for one
/// word is KMP's), one rule per state, each a choice of ending here or one more character and
/// the next state. References are in tail position, so the matcher runs it in constant depth:
/// the language is regular and the rules finite-state.
enum TextExclusion {
    /// Adds the rules under `prefix` to `rules`; returns the start rule's name. `notFirst`: the
    /// characters the text may not start with.
    @discardableResult
    static func add(
        avoiding words: [String], notFirst: String = "", prefix: String, to rules: inout [String: GrammarExpression]
    ) -> String {
        let words = words.map { $0.unicodeScalars.map(\.value) }.filter { !$0.isEmpty }
        let alphabet = Array(Set(words.flatMap { $0 })).sorted()
        var prefixes: Set<[UInt32]> = []
        for w in words {
            for n in 0..<w.count { prefixes.insert(Array(w[0..<n])) }
        }
        func hasSuffix(_ t: [UInt32], _ w: [UInt32]) -> Bool {
            t.count >= w.count && Array(t[(t.count - w.count)...]) == w
        }
        /// The state after `t` was read: its longest suffix that starts a word; nil when `t` ends with a word.
        func state(after t: [UInt32]) -> [UInt32]? {
            if words.contains(where: { hasSuffix(t, $0) }) { return nil }
            for n in stride(from: t.count, through: 0, by: -1) where prefixes.contains(Array(t[(t.count - n)...])) {
                return Array(t[(t.count - n)...])
            }
            return []
        }
        var ids: [[UInt32]: Int] = [[]: 0]
        var order: [[UInt32]] = [[]]
        var next = 0
        func name(_ id: Int) -> String { "\(prefix)-\(id)" }
        while next < order.count {
            let s = order[next]
            next += 1
            var alternatives: [GrammarExpression] = [.empty]
            let others = GrammarExpression.characters(alphabet.map { $0...$0 }, negated: true)
            alternatives.append(.sequence([others, .rule(name(0))]))
            for c in alphabet {
                guard let t = state(after: s + [c]) else { continue }
                if ids[t] == nil {
                    ids[t] = order.count
                    order.append(t)
                }
                alternatives.append(.sequence([.characters([c...c], negated: false), .rule(name(ids[t]!))]))
            }
            rules[name(ids[s]!)] = .choice(alternatives)
        }
        let excluded = notFirst.unicodeScalars.map(\.value)
        guard !excluded.isEmpty else { return name(0) }
        var first: [GrammarExpression] = [
            .empty,
            .sequence([
                .characters(Array(Set(alphabet + excluded)).sorted().map { $0...$0 }, negated: true), .rule(name(0)),
            ]),
        ]
        for c in alphabet where !excluded.contains(c) {
            guard let t = state(after: [c]), let id = ids[t] else { continue }
            first.append(.sequence([.characters([c...c], negated: false), .rule(name(id))]))
        }
        rules["\(prefix)-first"] = .choice(first)
        return "\(prefix)-first"
    }
}
