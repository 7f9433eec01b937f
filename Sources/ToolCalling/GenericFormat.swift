import GenerationVocabulary

/// For templates that know no tools (SmolLM2, Gemma 3's stock template, …): `instruction`
/// lists the tools in a system text, and the answer is either plain text (not starting with
/// `{`) or only the JSON object
/// `{"tool_calls": [{"name": "f", "arguments": {…}}, …]}` (one element unless parallel calls
/// are allowed). Parsing finds the object at the start of a line (after text too) and takes
/// `parameters` for `arguments`; a call is complete once its object closed.
public struct GenericFormat: ToolCallFormat, CallGrammarShape {
    public let name = "generic"
    public let startsInReasoning: Bool

    public init(startsInReasoning: Bool = false) {
        self.startsInReasoning = startsInReasoning
    }

    public func startingInReasoning(_ open: Bool) -> any ToolCallFormat { GenericFormat(startsInReasoning: open) }

    public func parse(_ text: String, final: Bool) -> ParsedAnswer {
        AnswerParser.parse(
            text, final: final, startsInReasoning: startsInReasoning, syntax: FencedSyntax(inner: GenericSyntax()))
    }

    public func grammar(for use: ToolUse, reasoning: Bool) throws(ToolGrammarError) -> Grammar? {
        try ToolGrammarBuilder.build(self, use: use, reasoning: reasoning, startsInReasoning: startsInReasoning)
    }

    /// The system text: the tools (name, description, parameters schema) and how to call them,
    /// worded after the choice (`none`: shown, never to be called).
    public func instruction(for use: ToolUse) -> String? {
        guard !use.tools.isEmpty else { return nil }
        var lines = ["You have access to the following tools:"]
        for tool in use.tools {
            lines.append("")
            lines.append("- name: \(tool.name)")
            if let d = tool.description, !d.isEmpty { lines.append("  description: \(d)") }
            lines.append("  parameters (JSON Schema): \(tool.parameters ?? #"{"type":"object"}"#)")
        }
        lines.append("")
        let form = #"{"tool_calls": [{"name": "<tool name>", "arguments": {<the arguments as JSON>}}]}"#
        switch use.choice {
        case .none:
            lines.append("Do not call any tool now: answer in plain text.")
            return lines.joined(separator: "\n")
        case .auto:
            lines.append("To call tools, answer with only this JSON object and nothing else:")
        case .required:
            lines.append("You must call at least one tool: answer with only this JSON object and nothing else:")
        case .function(let name):
            lines.append("You must call the tool \(name): answer with only this JSON object and nothing else:")
        }
        lines.append(form)
        let single: Bool
        if case .function = use.choice { single = true } else { single = !use.parallel }
        lines.append(
            single
                ? "Make exactly one call (one element in tool_calls)."
                : "Put one element in tool_calls for each call; you may make several calls at once.")
        if use.choice == .auto {
            lines.append("Otherwise answer the user in plain text, which must not start with \"{\".")
        }
        return lines.joined(separator: "\n")
    }

    public func markup(for calls: [ToolCall]) -> String {
        let items = calls.map {
            #"{"name": \#(ToolGrammarBuilder.jsonString($0.name)), "arguments": \#($0.arguments)}"#
        }
        return #"{"tool_calls": ["# + items.joined(separator: ", ") + "]}"
    }

    var avoidedWords: [String] { ["\n{"] }
    var lineOpener: String { "{" }

    func call(_ builder: inout ToolGrammarBuilder, tool: Int) throws(ToolGrammarError) -> GrammarExpression {
        try builder.jsonCall(tool, argumentsKey: "arguments")
    }

    func list(_ one: GrammarExpression, parallel: Bool) -> GrammarExpression {
        let items: GrammarExpression = parallel ? .sequence([one, .zeroOrMore(.sequence([.text(", "), one]))]) : one
        return .sequence([.text(#"{"tool_calls": ["#), items, .text("]}")])
    }
}
