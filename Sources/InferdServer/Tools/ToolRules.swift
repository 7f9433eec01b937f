import Foundation
import GenerationVocabulary

/// A forwarded answer's calls checked against the request's tool use, the rules a local model's
/// grammar enforces by construction: every call names one of the tools, its arguments are a JSON
/// object, `none` makes no call, `required` and a named function at least one (unless the answer
/// was cut off by `max_tokens`), a named function only that one, and a single call at most when
/// `parallel_tool_calls` is false or a function is named. A strict tool's arguments are not
/// validated against its schema here (`strict` is forwarded for the upstream to enforce).
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

    static func isObject(_ text: String) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any]
    }
}
