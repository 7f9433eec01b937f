import Engine
import Foundation
import GenerationVocabulary
import HTTPServer
import Telemetry
import ToolCalling

/// An answer with tools, read by the model's call format: the final message (text, reasoning,
/// calls), and while it streams, what each snapshot adds. Snapshots are parsed whole (the format
/// holds back text that may still become call markup), so each call's argument fragments
/// concatenate to exactly the final `arguments`, and no markup ever reaches `content`. A call's id
/// is made when the call first shows and kept for the final answer.
final class ToolAnswerTracker: Sendable {
    /// What one snapshot adds: new text, new reasoning, and per call its opening (id and name,
    /// once) and new argument text.
    struct Delta: Equatable {
        var content: String?
        var reasoning: String?
        var calls: [CallDelta] = []
        /// The reasoning closed with this snapshot (`</think>` written): it will not grow again.
        var reasoningEnded = false

        var isEmpty: Bool { content == nil && reasoning == nil && calls.isEmpty }
    }

    struct CallDelta: Equatable {
        var index: Int
        /// Set on the call's first delta only.
        var id: String?
        var name: String?
        var arguments: String
    }

    /// The final message.
    struct Message: Equatable {
        var content: String
        var reasoning: String?
        var calls: [ToolCall]
        /// Calls end a turn `tool_calls` unless the answer was cut off.
        var finishReason: String
    }

    let format: any ToolCallFormat
    /// A forwarded answer's tool use, to check the final message against (`ToolRules`); nil when
    /// the answer was constrained here.
    let rules: ToolUse?
    private let state = Locked(State())

    private struct State {
        var content = ""
        var reasoning = ""
        var calls: [(id: String, name: String, arguments: String)] = []
        var reasoningEnded = false
    }

    init(format: any ToolCallFormat, rules: ToolUse? = nil) {
        self.format = format
        self.rules = rules
    }

    /// The error for a final message that breaks the forwarded rules: the upstream failed, 502
    /// `upstream_failed`, naming the rule; nil when it keeps them (or there are none to check).
    func violation(_ message: Message) -> OpenAIError? {
        guard let rules,
            let why = ToolRules.violation(message.calls, finishReason: message.finishReason, rules: rules)
        else { return nil }
        return OpenAIError(HTTPError(GenerationError.upstreamFailed(why)))
    }

    /// A new id in OpenAI's shape: `call_` and 24 letters and digits.
    static func newCallID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var g = SystemRandomNumberGenerator()
        return "call_" + String((0..<24).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] })
    }

    /// What `text` (the whole answer so far) adds to what was already reported.
    func update(_ text: String, final: Bool) -> Delta {
        let parsed = format.parse(text, final: final)
        let ended = state.withLock { $0.reasoningEnded } || parsed.reasoning != nil && format.closesReasoning(text)
        return state.withLock { s in
            var delta = Delta()
            if ended, !s.reasoningEnded {
                s.reasoningEnded = true
                delta.reasoningEnded = true
            }
            delta.content = Self.suffix(parsed.content, after: &s.content)
            delta.reasoning = Self.suffix(parsed.reasoning ?? "", after: &s.reasoning)
            for (index, call) in parsed.calls.enumerated() {
                if index == s.calls.count {
                    s.calls.append((Self.newCallID(), call.name, ""))
                    delta.calls.append(CallDelta(index: index, id: s.calls[index].id, name: call.name, arguments: ""))
                }
                if let piece = Self.suffix(call.arguments, after: &s.calls[index].arguments) {
                    if let last = delta.calls.last, last.index == index {
                        delta.calls[delta.calls.count - 1].arguments += piece
                    } else {
                        delta.calls.append(CallDelta(index: index, arguments: piece))
                    }
                }
            }
            return delta
        }
    }

    /// The whole answer so far (`text`), parsed as a snapshot shows it: each call with its id,
    /// made when the call first shows and kept for the final answer.
    func snapshot(_ text: String) -> (answer: ParsedAnswer, ids: [String]) {
        let parsed = format.parse(text, final: false)
        return (parsed, ids(count: parsed.calls.count))
    }

    /// The ids of the first `count` calls, making those not seen yet.
    private func ids(count: Int) -> [String] {
        state.withLock { s in
            while s.calls.count < count { s.calls.append((Self.newCallID(), "", "")) }
            return s.calls.prefix(count).map(\.id)
        }
    }

    /// Whether an answer that ended for `finishReason` is parsed as complete. One cut off by
    /// `max_tokens` is not: text held back as possible call markup (`{"tool_calls":`, `<tool_`)
    /// stays out of the content instead of being released as text.
    static func isFinal(_ finishReason: String) -> Bool { finishReason != FinishReason.length.rawValue }

    /// The final message of `text`; a call cut off (by `max_tokens`, a stop or a cancel) is not a
    /// call: it is left out and the finish reason stays the generation's.
    func message(_ text: String, finishReason: String) -> Message {
        message(text, finishReason: finishReason, final: Self.isFinal(finishReason))
    }

    /// The same, parsed as complete only when `final` (a cancelled answer is not: what might
    /// still have become call markup stays out of its content, as in its last snapshot).
    func message(_ text: String, finishReason: String, final: Bool) -> Message {
        let parsed = format.parse(text, final: final)
        let ids = ids(count: parsed.calls.count)
        let complete = parsed.calls.enumerated().filter { $0.element.complete }
        let calls = complete.map {
            ToolCall(id: ids[$0.offset], name: $0.element.name, arguments: $0.element.arguments)
        }
        let reason = !calls.isEmpty && finishReason == FinishReason.stop.rawValue ? "tool_calls" : finishReason
        return Message(content: parsed.content, reasoning: parsed.reasoning, calls: calls, finishReason: reason)
    }

    /// The part of `now` past `sent` (which becomes `now`), or nil when nothing is new. Parsed
    /// snapshots only grow; one that does not extend what was sent yields nothing.
    static func suffix(_ now: String, after sent: inout String) -> String? {
        guard now.utf8.count > sent.utf8.count, now.utf8.starts(with: sent.utf8) else { return nil }
        let piece = String(decoding: now.utf8.dropFirst(sent.utf8.count), as: UTF8.self)
        sent = now
        return piece
    }
}
