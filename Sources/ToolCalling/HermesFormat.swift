import GenerationVocabulary

/// Hermes 2 Pro, Qwen 2.5, Qwen 3: each call a block
/// `<tool_call>\n{"name": "f", "arguments": {…}}\n</tool_call>`; parallel calls are several
/// blocks (a line break between them in the grammar). Parsing tolerates other whitespace,
/// `arguments` before `name`, `parameters` for `arguments` and a missing closing tag (a stop
/// sequence may have taken it); blocks may come after text and inside the reasoning.
public struct HermesFormat: ToolCallFormat, CallGrammarShape {
    public let name = "hermes"
    public let startsInReasoning: Bool

    public init(startsInReasoning: Bool = false) {
        self.startsInReasoning = startsInReasoning
    }

    public func startingInReasoning(_ open: Bool) -> any ToolCallFormat { HermesFormat(startsInReasoning: open) }

    public func parse(_ text: String, final: Bool) -> ParsedAnswer {
        AnswerParser.parse(text, final: final, startsInReasoning: startsInReasoning, syntax: HermesSyntax())
    }

    public func grammar(for use: ToolUse, reasoning: Bool) throws(ToolGrammarError) -> Grammar? {
        try ToolGrammarBuilder.build(self, use: use, reasoning: reasoning, startsInReasoning: startsInReasoning)
    }

    public func instruction(for use: ToolUse) -> String? { nil }

    public func markup(for calls: [ToolCall]) -> String {
        calls.map {
            #"<tool_call>\#n{"name": \#(ToolGrammarBuilder.jsonString($0.name)), "arguments": \#($0.arguments)}\#n</tool_call>"#
        }
        .joined(separator: "\n")
    }

    var avoidedWords: [String] { ["<tool_call>"] }
    var lineOpener: String { "" }

    func call(_ builder: inout ToolGrammarBuilder, tool: Int) throws(ToolGrammarError) -> GrammarExpression {
        .sequence([
            .text("<tool_call>\n"), try builder.jsonCall(tool, argumentsKey: "arguments"), .text("\n</tool_call>"),
        ])
    }

    func list(_ one: GrammarExpression, parallel: Bool) -> GrammarExpression {
        parallel ? .sequence([one, .zeroOrMore(.sequence([.text("\n"), one]))]) : one
    }
}
