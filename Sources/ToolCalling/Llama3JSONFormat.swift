import GenerationVocabulary

/// Llama 3.1–3.3 (JSON tool calling): a call is `{"name": "f", "parameters": {…}}` starting a
/// line (in practice the whole answer), or after `<|python_tag|>`. Several calls are separated
/// by `;` (`{…}; {…}`, what the grammar writes when parallel calls are allowed) or each start a
/// line. Parsing also takes `arguments` for `parameters` and a leading `"type": "function"`.
/// A built-in tool's call (`<|python_tag|>brave_search.call(query="x")`) is parsed as a call
/// to `brave_search` with `{"query": "x"}`; the grammar never lets one through (free text
/// cannot contain the tag, and calls are the tools' JSON).
public struct Llama3JSONFormat: ToolCallFormat, CallGrammarShape {
    public let name = "llama3_json"
    public let startsInReasoning: Bool

    public init(startsInReasoning: Bool = false) {
        self.startsInReasoning = startsInReasoning
    }

    public func startingInReasoning(_ open: Bool) -> any ToolCallFormat { Llama3JSONFormat(startsInReasoning: open) }

    public func parse(_ text: String, final: Bool) -> ParsedAnswer {
        AnswerParser.parse(
            text, final: final, startsInReasoning: startsInReasoning, syntax: FencedSyntax(inner: Llama3JSONSyntax()))
    }

    public func grammar(for use: ToolUse, reasoning: Bool) throws(ToolGrammarError) -> Grammar? {
        try ToolGrammarBuilder.build(self, use: use, reasoning: reasoning, startsInReasoning: startsInReasoning)
    }

    public func instruction(for use: ToolUse) -> String? { nil }

    public func markup(for calls: [ToolCall]) -> String {
        calls.map { #"{"name": \#(ToolGrammarBuilder.jsonString($0.name)), "parameters": \#($0.arguments)}"# }
            .joined(separator: "; ")
    }

    var avoidedWords: [String] { ["<|python_tag|>", "\n{"] }
    var lineOpener: String { "{" }

    func call(_ builder: inout ToolGrammarBuilder, tool: Int) throws(ToolGrammarError) -> GrammarExpression {
        try builder.jsonCall(tool, argumentsKey: "parameters")
    }

    func list(_ one: GrammarExpression, parallel: Bool) -> GrammarExpression {
        parallel ? .sequence([one, .zeroOrMore(.sequence([.text("; "), one]))]) : one
    }
}
