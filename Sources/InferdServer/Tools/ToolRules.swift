import Engine
import Foundation
import GenerationVocabulary
import StructuredOutput

/// A forwarded answer's calls checked against the request's tool use, the rules a local model's
/// grammar enforces by construction: every call names one of the tools, its arguments are a JSON
/// object, `none` makes no call, `required` and a named function at least one (unless the answer
/// was cut off by `max_tokens`), a named function only that one, and a single call at most when
/// `parallel_tool_calls` is false or a function is named, and a `strict` tool's arguments match
/// its schema (`matchesSchema`).
enum ToolRules {
    /// What the answer broke, for the caller's error; nil when it keeps the rules.
    static func violation(_ calls: [ToolCall], finishReason: String, rules: ToolUse) -> String? {
        let names = Set(rules.tools.map(\.name))
        if let unknown = calls.first(where: { !names.contains($0.name) }) {
            return "the upstream called '\(unknown.name)', which is not one of the request's tools"
        }
        if let bad = calls.first(where: { !isObject($0.arguments) }) {
            return "the upstream's call to '\(bad.name)' has arguments that are not a JSON object"
        }
        for call in calls {
            guard let tool = rules.tools.first(where: { $0.name == call.name }), tool.strict,
                let schema = tool.parameters, matchesSchema(call.arguments, schema) == false
            else { continue }
            return "the upstream's call to '\(call.name)' has arguments that do not match the strict tool's schema"
        }
        let cutOff = finishReason == FinishReason.length.rawValue
        switch rules.choice {
        case .auto:
            break
        case .none:
            if let call = calls.first {
                return "tool_choice is none, but the upstream called '\(call.name)'"
            }
        case .required:
            if calls.isEmpty, !cutOff {
                return "tool_choice is required, but the upstream answered without a tool call"
            }
        case .function(let name):
            if let other = calls.first(where: { $0.name != name }) {
                return "tool_choice names the function '\(name)', but the upstream called '\(other.name)'"
            }
            if calls.isEmpty, !cutOff {
                return "tool_choice names the function '\(name)', but the upstream answered without calling it"
            }
        }
        let single: Bool
        if case .function = rules.choice { single = true } else { single = !rules.parallel }
        if single, calls.count > 1 {
            let rule = rules.parallel ? "tool_choice names one function" : "parallel_tool_calls is false"
            return "\(rule), but the upstream made \(calls.count) calls"
        }
        return nil
    }

    /// Whether `arguments` validate against `schema`, judged by the schema's grammar (the one a
    /// local model's strict calls are held to); nil when the schema cannot be compiled (a keyword
    /// the compiler cannot enforce: not judged). The grammar writes members in `properties`
    /// order, which JSON Schema does not ask for, so members are put in that order first (through
    /// `properties` and `items`, as far as they reach without `$ref` or combinators) and the value
    /// is written compactly.
    static func matchesSchema(_ arguments: String, _ schema: String) -> Bool? {
        let grammar: CompiledGrammar
        let schemaValue: JSONValue
        do {
            schemaValue = try JSONParser.parse(schema)
            grammar = try CompiledGrammar(try JSONSchemaCompiler.compile(schemaValue))
        } catch {
            return nil
        }
        guard let value = try? JSONParser.parse(arguments) else { return false }
        let text = ordered(value, by: schemaValue).compactText
        let matcher = GrammarMatcher(grammar: grammar)
        return matcher.accept(bytes: text.utf8) && matcher.canEnd
    }

    /// `value` with its objects' members in the order of `schema`'s `properties` (others after,
    /// in their order).
    static func ordered(_ value: JSONValue, by schema: JSONValue?) -> JSONValue {
        switch value {
        case .object(let members):
            let properties = schema?["properties"]?.objectMembers ?? []
            let rank = Dictionary(properties.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { a, _ in a })
            let sorted = members.enumerated().sorted { a, b in
                let (ra, rb) = (rank[a.element.key] ?? Int.max, rank[b.element.key] ?? Int.max)
                return ra != rb ? ra < rb : a.offset < b.offset
            }
            return .object(
                sorted.map { m in
                    JSONValue.Member(
                        m.element.key,
                        ordered(m.element.value, by: properties.first { $0.key == m.element.key }?.value))
                })
        case .array(let items):
            return .array(items.map { ordered($0, by: schema?["items"]) })
        default:
            return value
        }
    }

    static func isObject(_ text: String) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any]
    }
}
