import GenerationVocabulary
import StructuredOutput

/// Llama 3.2 (per its docs' pythonic prompt), Gemma 3 function calling, Llama 4: the calls are
/// a Python list `[f(a=1, b="x"), g()]` starting a line (in practice the whole answer); parallel
/// calls are more elements of the list. Keyword arguments are converted to a JSON object text
/// (`PythonicArguments`): `True/False/None` → `true/false/null`, single-quoted strings → JSON
/// strings, tuples → arrays.
///
/// The grammar keeps names to the tools and argument names to the schema's `properties`, the
/// values to Python literals; it does not enforce the schemas' types, so a `strict` tool is
/// refused (`.unenforceable(tool:, keyword: "pythonic", path: "$")`).
public struct PythonicFormat: ToolCallFormat, CallGrammarShape {
    public let name = "pythonic"
    public let startsInReasoning: Bool

    public init(startsInReasoning: Bool = false) {
        self.startsInReasoning = startsInReasoning
    }

    public func startingInReasoning(_ open: Bool) -> any ToolCallFormat { PythonicFormat(startsInReasoning: open) }

    public func parse(_ text: String, final: Bool) -> ParsedAnswer {
        AnswerParser.parse(
            text, final: final, startsInReasoning: startsInReasoning, syntax: FencedSyntax(inner: PythonicSyntax()))
    }

    public func grammar(for use: ToolUse, reasoning: Bool) throws(ToolGrammarError) -> Grammar? {
        try ToolGrammarBuilder.build(self, use: use, reasoning: reasoning, startsInReasoning: startsInReasoning)
    }

    public func instruction(for use: ToolUse) -> String? { nil }

    /// `[f(a=1, b="x")]`: each argument's JSON value with `true`/`false`/`null` as Python writes
    /// them (strings stay JSON strings, which Python reads alike).
    public func markup(for calls: [ToolCall]) -> String {
        let items = calls.map { call -> String in
            guard case .object(let members)? = try? JSONParser.parse(call.arguments) else { return "\(call.name)()" }
            let arguments = members.map { "\($0.key)=\(Self.python($0.value))" }
            return "\(call.name)(\(arguments.joined(separator: ", ")))"
        }
        return "[" + items.joined(separator: ", ") + "]"
    }

    static func python(_ value: JSONValue) -> String {
        switch value {
        case .bool(let b): b ? "True" : "False"
        case .null: "None"
        case .array(let items): "[" + items.map(python).joined(separator: ", ") + "]"
        case .object(let members):
            "{" + members.map { "\(JSONValue.string($0.key).compactText): \(python($0.value))" }.joined(separator: ", ")
                + "}"
        default: value.compactText
        }
    }

    var avoidedWords: [String] { ["\n["] }
    var lineOpener: String { "[" }

    static let value = "tc-py-value"

    /// Python literals (strings, numbers, True/False/None, lists, dicts), once per grammar.
    static func addValueRules(to rules: inout [String: GrammarExpression]) {
        guard rules[value] == nil else { return }
        // What `PythonicArguments` reads after a backslash: `\uXXXX`, `\xHH`, or any other character.
        let hex = GrammarExpression.byteSet([0x30...0x39, 0x41...0x46, 0x61...0x66])
        let escape = GrammarExpression.choice([
            .characters([0x0A...0x0A, 0x75...0x75, 0x78...0x78], negated: true),
            .sequence([.text("u"), .repetition(hex, minimum: 4, maximum: 4)]),
            .sequence([.text("x"), .repetition(hex, minimum: 2, maximum: 2)]),
        ])
        func quoted(_ q: String) -> GrammarExpression {
            .sequence([
                .text(q),
                .zeroOrMore(
                    .choice([
                        .characters(
                            [0x0A...0x0A, 0x5C...0x5C] + q.unicodeScalars.map { $0.value...$0.value }, negated: true),
                        .sequence([.text("\\"), escape]),
                    ])),
                .text(q),
            ])
        }
        let digit = GrammarExpression.byteSet([0x30...0x39])
        let number = GrammarExpression.sequence([
            .optional(.text("-")),
            .choice([.text("0"), .sequence([.byteSet([0x31...0x39]), .repetition(digit, minimum: 0, maximum: 15)])]),
            .optional(.sequence([.text("."), .repetition(digit, minimum: 1, maximum: 15)])),
        ])
        let string = GrammarExpression.choice([quoted("\""), quoted("'")])
        let separator = GrammarExpression.sequence([.text(","), .optional(.text(" "))])
        let list = GrammarExpression.sequence([
            .text("["), .optional(.sequence([.rule(value), .zeroOrMore(.sequence([separator, .rule(value)]))])),
            .text("]"),
        ])
        let entry = GrammarExpression.sequence([string, .text(":"), .optional(.text(" ")), .rule(value)])
        let dict = GrammarExpression.sequence([
            .text("{"), .optional(.sequence([entry, .zeroOrMore(.sequence([separator, entry]))])), .text("}"),
        ])
        rules[value] = .choice([string, number, .text("True"), .text("False"), .text("None"), list, dict])
    }

    func call(_ builder: inout ToolGrammarBuilder, tool: Int) throws(ToolGrammarError) -> GrammarExpression {
        let t = builder.use.tools[tool]
        if t.strict { throw .unenforceable(tool: t.name, keyword: "pythonic", path: "$") }
        Self.addValueRules(to: &builder.rules)
        let properties = t.parameters.flatMap { try? JSONParser.parse($0) }?["properties"]?.objectMembers?.map(\.key)
        let key: GrammarExpression
        if let properties, !properties.isEmpty {
            key = .choice(properties.map { .text($0) })
        } else {
            key = .sequence([
                .characters([0x41...0x5A, 0x5F...0x5F, 0x61...0x7A], negated: false),
                .repetition(
                    .characters([0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A], negated: false), minimum: 0,
                    maximum: 63),
            ])
        }
        let argument = GrammarExpression.sequence([key, .text("="), .rule(Self.value)])
        return .sequence([
            .text("\(t.name)("),
            .optional(.sequence([argument, .zeroOrMore(.sequence([.text(", "), argument]))])),
            .text(")"),
        ])
    }

    func list(_ one: GrammarExpression, parallel: Bool) -> GrammarExpression {
        .sequence([
            .text("["), parallel ? .sequence([one, .zeroOrMore(.sequence([.text(", "), one]))]) : one, .text("]"),
        ])
    }
}
