import GenerationVocabulary

/// Strings that are none of a few words (`not: {enum: [...]}` or `not: {const: ...}` beside a
/// plain `type: string`), decided on the decoded characters, as JSON Schema compares strings.
///
/// The contents walk the words' trie: at each node, the end of the string when no word ends
/// there; a character no word continues with, then anything; or a character some word
/// continues with, then contents that differ from those words' rest. A character that
/// continues a word is written one way only (plainly, or its short escape, or `\u00XX` for a
/// control character); one that leaves every word may be written any way, except that no
/// spelling of a continuing character (its `\u` escape in either case, a surrogate pair's first
/// half when a word continues with a character beyond U+FFFF) is taken for a leaving one. So
/// no spelling of an excluded word gets through, and every other string can still be written.
extension JSONSchemaCompiler {
    /// JSON string contents whose decoded text is none of `words`.
    mutating func contentOutside(_ words: [String]) -> GrammarExpression {
        contentOutside(words.map { Array($0.unicodeScalars.map(\.value)) }, depth: 0)
    }

    mutating func contentOutside(_ words: [[UInt32]], depth: Int) -> GrammarExpression {
        let live = words.filter { $0.count > depth }
        var options: [GrammarExpression] = []
        if live.count == words.count { options.append(.empty) }  // no word ends here
        let nexts = Set(live.map { $0[depth] }).sorted()
        options.append(.sequence([.rule(characterOutside(nexts)), .zeroOrMore(.rule(JSONGrammar.stringChar))]))
        for c in nexts {
            options.append(
                .sequence([RegexParser.literal(c), contentOutside(live.filter { $0[depth] == c }, depth: depth + 1)]))
        }
        return .choice(options)
    }

    /// A rule for one JSON string character (any spelling) that is none of `excluded`.
    mutating func characterOutside(_ excluded: [UInt32]) -> String {
        if let name = characterOutsideRules[excluded] { return name }
        let name = freshName("char-outside")
        characterOutsideRules[excluded] = name
        characterRules.insert(name)
        var options: [GrammarExpression] = [
            .characters([0...0x1F, 0x22...0x22, 0x5C...0x5C] + excluded.map { $0...$0 }, negated: true)
        ]
        let short: [(String, UInt32)] = [
            ("\"", 0x22), ("\\", 0x5C), ("/", 0x2F), ("b", 0x08), ("f", 0x0C), ("n", 0x0A), ("r", 0x0D), ("t", 0x09),
        ]
        for (letter, c) in short where !excluded.contains(c) { options.append(.text("\\" + letter)) }
        // `\u` and four hex digits (either case) that spell none of the excluded characters.
        var codes = excluded.filter { $0 <= 0xFFFF }.map { Self.nibbles($0) }
        if excluded.contains(where: { $0 > 0xFFFF }) {
            codes += (0xD800...0xDBFF).map { Self.nibbles(UInt32($0)) }
        }
        if let hex = Self.hexOutside(codes, position: 0) { options.append(.sequence([.text("\\u"), hex])) }
        rules[name] = .choice(options)
        return name
    }

    static func nibbles(_ c: UInt32) -> [Int] { (0..<4).map { Int(c >> UInt32(12 - 4 * $0)) & 0xF } }

    /// Hex digits from `position` to 4 whose values are none of `codes` (nibble sequences);
    /// nil when none.
    static func hexOutside(_ codes: [[Int]], position: Int) -> GrammarExpression? {
        if position == 4 { return codes.isEmpty ? .empty : nil }
        let anyHex = GrammarExpression.byteSet([0x30...0x39, 0x41...0x46, 0x61...0x66])
        func digit(_ v: Int) -> GrammarExpression {
            v < 10 ? .text(String(v)) : .chars(String(v, radix: 16) + String(v, radix: 16).uppercased())
        }
        let taken = Set(codes.map { $0[position] })
        var options: [GrammarExpression] = []
        let free = (0..<16).filter { !taken.contains($0) }
        if !free.isEmpty {
            let first: GrammarExpression =
                free.count == 16 ? anyHex : .choice(free.map(digit))
            options.append(.sequence([first, .repetition(anyHex, minimum: 3 - position, maximum: 3 - position)]))
        }
        for v in taken.sorted() {
            if let tail = hexOutside(codes.filter { $0[position] == v }, position: position + 1) {
                options.append(.sequence([digit(v), tail]))
            }
        }
        return options.isEmpty ? nil : options.count == 1 ? options[0] : .choice(options)
    }
}
