import Backend
import Engine
import HTTPServer
import ToolCalling

/// The constraint that makes an answer keep a request's tool rules by construction: call names
/// from the tools, arguments matching each tool's schema, `required` and a named function forcing
/// a call, `parallel_tool_calls: false` at most one, `none` never one. What the grammar cannot
/// enforce for a `strict` tool is a 400 naming the tool and the keyword.
enum ToolConstraint {
    static func make(
        _ use: ToolUse, format: any ToolCallFormat, reasoning: Bool, backend: any GenerationBackend,
        names: ToolFieldNames = .chat
    ) throws(OpenAIError) -> (any GenerationConstraint)? {
        let grammar: Grammar?
        do {
            grammar = try format.grammar(for: use, reasoning: reasoning)
        } catch {
            throw refusal(error, use, names: names)
        }
        guard let grammar else { return nil }
        let compiled: CompiledGrammar
        do {
            compiled = try CompiledGrammar(grammar)
        } catch {
            throw .invalid("tools: the tools' grammar cannot be compiled: \(error)", param: "tools")
        }
        guard let constraint = backend.makeConstraint(grammar: compiled, identity: identity(use, format, reasoning))
        else {
            throw .unsupported("tools: this model's backend cannot constrain its answers", param: "tools")
        }
        return constraint
    }

    static func refusal(_ error: ToolGrammarError, _ use: ToolUse, names: ToolFieldNames = .chat) -> OpenAIError {
        switch error {
        case .unenforceable(let tool, let keyword, let path):
            let index = use.tools.firstIndex { $0.name == tool } ?? 0
            var e = OpenAIError.unsupported(
                "\(names.parameters(index)): '\(keyword)' at \(path) cannot be enforced, and the tool '\(tool)' is strict",
                param: names.parameters(index))
            e.code = .unsupportedSchemaKeyword
            return e
        case .unknownTool(let name):
            return .invalid(
                "\(names.choiceName) '\(name)' is not one of the tools", param: names.choiceName)
        default:
            return .invalid("tools: \(error)", param: "tools")
        }
    }

    /// What the grammar allows, for single-flight and the engine's constraint cache.
    static func identity(_ use: ToolUse, _ format: any ToolCallFormat, _ reasoning: Bool) -> String {
        var parts = [
            "tools", format.name, "\(use.choice)", "parallel=\(use.parallel)", "reasoning=\(reasoning)",
            "opened=\(format.startsInReasoning)",
        ]
        for tool in use.tools { parts += [tool.name, tool.parameters ?? "", "strict=\(tool.strict)"] }
        return parts.joined(separator: "\u{1F}")
    }
}
