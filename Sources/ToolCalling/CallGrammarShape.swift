import GenerationVocabulary

/// What a format's grammar is made of, for `ToolGrammarBuilder`.
protocol CallGrammarShape: Sendable {
    /// Words free text (content and reasoning) may not contain, so that it never holds call markup.
    var avoidedWords: [String] { get }
    /// For formats whose calls start a line: the character a call starts with, which free text
    /// may not start with (and a line in it neither: add `"\n" + opener` to `avoidedWords`);
    /// calls after text then follow a line break. Empty: calls may start anywhere.
    var lineOpener: String { get }
    /// One call to tool `tool` (an index into `builder.use.tools`).
    func call(_ builder: inout ToolGrammarBuilder, tool: Int) throws(ToolGrammarError) -> GrammarExpression
    /// The markup around one or more calls (`one`: any single call); exactly one unless `parallel`.
    func list(_ one: GrammarExpression, parallel: Bool) -> GrammarExpression
}
