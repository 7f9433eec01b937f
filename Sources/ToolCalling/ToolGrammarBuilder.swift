import GenerationVocabulary
import StructuredOutput

/// Builds the grammar of an answer under a `ToolUse` from a format's `CallGrammarShape`:
///
/// - reasoning (`reasoning: true`, or required when the format starts inside it):
///   `<think>` text `</think>` then up to two line breaks; the text contains neither
///   `</think>` nor call markup, so calls come after the reasoning;
/// - free text, for formats whose calls start a line, starts with neither whitespace nor the
///   call's first character and has no line break followed by it (the reasoning may open with
///   one line break);
/// - `.none`: free text that cannot contain the format's call markup;
/// - `.auto`: free text, or (optionally after text) calls, then optional whitespace;
/// - `.required`: only calls (one unless parallel), then optional whitespace;
/// - `.function(name)`: exactly one call, to it.
///
/// Each call's arguments follow its tool's `parameters` compiled by `JSONSchemaCompiler` (nil:
/// any JSON object). A schema that does not compile: a `strict` tool is refused
/// (`ToolGrammarError`), any other gets any JSON object. Object keys are not kept distinct
/// (`distinctObjectKeys` is false): the key tracker lexes the whole output as JSON, which free
/// text and markup are not.
struct ToolGrammarBuilder {
    let use: ToolUse
    var rules: [String: GrammarExpression] = [:]
    /// Optional whitespace between and after calls.
    static let space = "tc-space"
    var argumentRules: [Int: GrammarExpression] = [:]

    init(use: ToolUse) {
        self.use = use
        rules[Self.space] = .repetition(.chars(" \t\n"), minimum: 0, maximum: 4)
    }

    static func build(
        _ shape: some CallGrammarShape, use: ToolUse, reasoning: Bool, startsInReasoning: Bool
    ) throws(ToolGrammarError) -> Grammar? {
        var b = ToolGrammarBuilder(use: use)
        // Where calls start a line, free text starts with neither whitespace nor the opener.
        let notFirst = shape.lineOpener.isEmpty ? "" : shape.lineOpener + " \t\r\n"
        let text = GrammarExpression.rule(
            TextExclusion.add(avoiding: shape.avoidedWords, notFirst: notFirst, prefix: "tc-text", to: &b.rules))
        func calls(_ tools: [Int], parallel: Bool) throws(ToolGrammarError) -> GrammarExpression {
            var one: [GrammarExpression] = []
            for i in tools { one.append(try shape.call(&b, tool: i)) }
            return .sequence([shape.list(.choice(one), parallel: parallel), .rule(space)])
        }
        let all = Array(use.tools.indices)
        let body: GrammarExpression
        switch use.choice {
        case .none:
            guard !use.tools.isEmpty else { return nil }
            body = text
        case .auto:
            guard !use.tools.isEmpty else { return nil }
            let c = try calls(all, parallel: use.parallel)
            if shape.lineOpener.isEmpty {
                body = .sequence([text, .optional(c)])
            } else {
                let afterText = GrammarExpression.sequence([text, .text("\n"), c])
                body = .choice([text, c, afterText])
            }
        case .required:
            guard !use.tools.isEmpty else { throw .noTools }
            body = try calls(all, parallel: use.parallel)
        case .function(let name):
            guard let i = use.tools.firstIndex(where: { $0.name == name }) else { throw .unknownTool(name) }
            body = try calls([i], parallel: false)
        }
        var root = body
        if reasoning || startsInReasoning {
            let thought = TextExclusion.add(
                avoiding: ["</think>"] + shape.avoidedWords, notFirst: notFirst, prefix: "tc-think", to: &b.rules)
            // The reasoning may open with one line break (`<think>\n`), then as free text.
            let closed = GrammarExpression.sequence([
                notFirst.isEmpty ? .empty : .optional(.text("\n")), .rule(thought), .text("</think>"),
                .repetition(.text("\n"), minimum: 0, maximum: 2), body,
            ])
            root = startsInReasoning ? closed : .choice([body, .sequence([.text("<think>"), closed])])
        }
        b.rules["tc-root"] = root
        return Grammar(root: "tc-root", rules: b.rules)
    }

    /// A JSON string literal.
    static func jsonString(_ s: String) -> String { JSONValue.string(s).compactText }

    /// The grammar of tool `i`'s arguments (a JSON value; an object unless the schema says otherwise).
    mutating func arguments(_ i: Int) throws(ToolGrammarError) -> GrammarExpression {
        if let e = argumentRules[i] { return e }
        let tool = use.tools[i]
        let grammar: Grammar
        do throws(StructuredOutputError) {
            guard let parameters = tool.parameters else { throw StructuredOutputError.uncompilable("none") }
            grammar = try JSONSchemaCompiler.compile(try JSONParser.parse(parameters))
        } catch {
            if tool.strict, tool.parameters != nil {
                switch error {
                case .unsupportedKeyword(let keyword, let path):
                    throw .unenforceable(tool: tool.name, keyword: keyword, path: path)
                case .invalidSchema(let path, let message):
                    throw .invalidSchema(tool: tool.name, path: path, message: message)
                default:
                    throw .invalidSchema(tool: tool.name, path: "$", message: error.description)
                }
            }
            grammar = JSONGrammar.anyObject()
        }
        let e = merge(grammar, tag: "tc-args\(i)")
        argumentRules[i] = e
        return e
    }

    /// `{"name": "<tool>", "<argumentsKey>": <arguments>}` with optional whitespace between tokens.
    mutating func jsonCall(_ i: Int, argumentsKey: String) throws(ToolGrammarError) -> GrammarExpression {
        let ws = GrammarExpression.repetition(.chars(" \t\n"), minimum: 0, maximum: 4)
        return .sequence([
            .text("{"), ws, .text("\"name\""), ws, .text(":"), ws, .text(Self.jsonString(use.tools[i].name)), ws,
            .text(","), ws, .text(Self.jsonString(argumentsKey)), ws, .text(":"), ws, try arguments(i), ws, .text("}"),
        ])
    }

    /// Adds `g`'s rules, keeping the names of rules equal to ones already there (the shared JSON
    /// building blocks) and renaming the others under `tag`; returns a reference to its root.
    mutating func merge(_ g: Grammar, tag: String) -> GrammarExpression {
        var renamed: Set<String> = [g.root]
        for (name, e) in g.rules where rules[name] != nil && rules[name] != e { renamed.insert(name) }
        var changed = true
        while changed {
            changed = false
            for (name, e) in g.rules where !renamed.contains(name) && !Self.references(e).isDisjoint(with: renamed) {
                renamed.insert(name)
                changed = true
            }
        }
        func rename(_ n: String) -> String { renamed.contains(n) ? "\(tag)-\(n)" : n }
        for (name, e) in g.rules { rules[rename(name)] = Self.rewrite(e, rename) }
        return .rule(rename(g.root))
    }

    static func references(_ e: GrammarExpression) -> Set<String> {
        switch e {
        case .rule(let n): [n]
        case .sequence(let items), .choice(let items): items.reduce(into: []) { $0.formUnion(references($1)) }
        case .repetition(let inner, _, _): references(inner)
        case .literal, .byteSet, .characters: []
        }
    }

    static func rewrite(_ e: GrammarExpression, _ rename: (String) -> String) -> GrammarExpression {
        switch e {
        case .rule(let n): .rule(rename(n))
        case .sequence(let items): .sequence(items.map { rewrite($0, rename) })
        case .choice(let items): .choice(items.map { rewrite($0, rename) })
        case .repetition(let inner, let minimum, let maximum):
            .repetition(rewrite(inner, rename), minimum: minimum, maximum: maximum)
        case .literal, .byteSet, .characters: e
        }
    }
}
