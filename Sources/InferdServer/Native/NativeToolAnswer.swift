import Engine
import ToolCalling

/// A call as the native API shows it, in snapshots and final answers alike.
struct NativeToolCall: Codable, Sendable, Equatable {
    var id: String
    var type = "function"
    var name: String
    /// The arguments' JSON text; in a snapshot, what is written so far (each snapshot's text
    /// extends the last one's).
    var arguments: String
    /// Snapshots only: true while the call is still being written (its arguments incomplete).
    var partial: Bool?

    enum CodingKeys: String, CodingKey {
        case id, type, name, arguments, partial
    }
}

/// What a native answer with tools shows: the text outside reasoning and call markup, the
/// reasoning, the calls. A snapshot shows every call begun (`partial` until it closes); a final
/// answer only complete ones, so a call cut off by `max_tokens` or a cancel is never a call.
struct NativeToolAnswer: Sendable, Equatable {
    var content: String
    var reasoning: String?
    var toolCalls: [NativeToolCall]?
    /// Final answers: `tool_calls` when the answer ended with calls, else the generation's.
    var finishReason: String?

    /// The answer so far.
    static func snapshot(_ text: String, tracker: ToolAnswerTracker) -> NativeToolAnswer {
        let (parsed, ids) = tracker.snapshot(text)
        let calls = zip(parsed.calls, ids).map { call, id in
            NativeToolCall(id: id, name: call.name, arguments: call.arguments, partial: !call.complete)
        }
        return NativeToolAnswer(
            content: parsed.content, reasoning: parsed.reasoning, toolCalls: calls.isEmpty ? nil : calls)
    }

    /// The answer of a finished (completed or cancelled) generation.
    static func final(_ outcome: GenerationOutcome, tracker: ToolAnswerTracker) -> NativeToolAnswer {
        let reason = (outcome.finishReason ?? .cancelled).rawValue
        let final = outcome.status == .completed && ToolAnswerTracker.isFinal(reason)
        let m = tracker.message(outcome.content, finishReason: reason, final: final)
        let calls = m.calls.map { NativeToolCall(id: $0.id, name: $0.name, arguments: $0.arguments) }
        return NativeToolAnswer(
            content: m.content, reasoning: m.reasoning, toolCalls: calls.isEmpty ? nil : calls,
            finishReason: m.finishReason)
    }
}
