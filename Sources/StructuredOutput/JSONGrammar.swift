import GenerationVocabulary

/// The JSON building blocks every structured grammar uses, as named rules.
///
/// Whitespace between JSON tokens is bounded: at most `maxNewlines` line breaks, each line's
/// run of spaces or tabs at most `maxIndent` long, so a model cannot run away in whitespace.
public enum JSONGrammar {
    public static let maxNewlines = 2
    public static let maxIndent = 20

    static let ws = "ws"
    static let value = "json-value"
    static let string = "json-string"
    static let stringChar = "json-char"
    static let key = "json-key"
    static let number = "json-number"
    static let integer = "json-integer"
    static let object = "json-object"
    static let array = "json-array"

    static let digit = GrammarExpression.byteSet([0x30...0x39])
    static let nonZeroDigit = GrammarExpression.byteSet([0x31...0x39])

    /// Adds the base rules to `rules`.
    static func addBase(to rules: inout [String: GrammarExpression]) {
        let blanks = GrammarExpression.repetition(.chars(" \t"), minimum: 0, maximum: maxIndent)
        rules[ws] = .sequence([
            blanks, .repetition(.sequence([.text("\n"), blanks]), minimum: 0, maximum: maxNewlines),
        ])
        rules[stringChar] = .choice([
            .characters([0...0x1F, 0x22...0x22, 0x5C...0x5C], negated: true),
            .sequence([.text("\\"), .chars("\"\\/bfnrt")]),
            .sequence([
                .text("\\u"), .repetition(.byteSet([0x30...0x39, 0x41...0x46, 0x61...0x66]), minimum: 4, maximum: 4),
            ]),
        ])
        rules[string] = .sequence([.text("\""), .zeroOrMore(.rule(stringChar)), .text("\"")])
        rules[key] = .sequence([
            .text("\""), .repetition(.rule(stringChar), minimum: 0, maximum: StructuredBounds.maxKeyLength),
            .text("\""),
        ])
        // Digit counts are bounded (`StructuredBounds`), so a number always ends.
        rules[integer] = .sequence([
            .optional(.text("-")),
            .choice([
                .text("0"),
                .sequence([
                    nonZeroDigit,
                    .repetition(digit, minimum: 0, maximum: StructuredBounds.maxIntegerDigits - 1),
                ]),
            ]),
        ])
        rules[number] = .sequence([
            .rule(integer),
            .optional(
                .sequence([.text("."), .repetition(digit, minimum: 1, maximum: StructuredBounds.maxFractionDigits)])
            ),
            .optional(
                .sequence([
                    .chars("eE"), .optional(.chars("+-")),
                    .repetition(digit, minimum: 1, maximum: StructuredBounds.maxExponentDigits),
                ])),
        ])
        // A free value (JSON mode, `{}`, extra members without a schema) nests at most
        // `StructuredBounds.maxRecursionDepth` arrays and objects, as recursive `$ref`s do: level
        // k's containers hold level k + 1's values, the deepest ones are empty. Level 1 keeps
        // the plain names. Keys have at most `maxKeyLength` characters; the number of members
        // and elements is not bounded (a JSON mode answer may be a list of any length).
        let depth = StructuredBounds.maxRecursionDepth
        func leveled(_ name: String, _ k: Int) -> String { k == 1 ? name : "\(name)-\(k)" }
        for k in 1...depth {
            let inner = GrammarExpression.rule(leveled(value, k + 1))
            rules[leveled(value, k)] = .choice([
                .rule(leveled(object, k)), .rule(leveled(array, k)), .rule(string), .rule(number), .text("true"),
                .text("false"), .text("null"),
            ])
            // `{ ws }` or `{ ws m (ws , ws m)* ws }`: never two `ws` in a row, so the bound holds.
            let members = GrammarExpression.sequence([
                .rule(ws), member(.rule(key), inner),
                .zeroOrMore(.sequence([separator, member(.rule(key), inner)])),
            ])
            let elements = GrammarExpression.sequence([
                .rule(ws), inner, .zeroOrMore(.sequence([separator, inner])),
            ])
            rules[leveled(object, k)] = .sequence(
                [.text("{")] + (k < depth ? [.optional(members)] : []) + [.rule(ws), .text("}")])
            rules[leveled(array, k)] = .sequence(
                [.text("[")] + (k < depth ? [.optional(elements)] : []) + [.rule(ws), .text("]")])
        }
    }

    /// `ws "," ws`
    static var separator: GrammarExpression { .sequence([.rule(ws), .text(","), .rule(ws)]) }

    /// `key ws ":" ws value`
    static func member(_ key: GrammarExpression, _ value: GrammarExpression) -> GrammarExpression {
        .sequence([key, .rule(ws), .text(":"), .rule(ws), value])
    }

    /// JSON mode: any JSON object, with leading and trailing whitespace bounded like the rest.
    public static func anyObject() -> Grammar {
        var g = Grammar(root: "root")
        addBase(to: &g.rules)
        g.rules["root"] = .rule(object)
        g.distinctObjectKeys = true
        return g
    }
}
