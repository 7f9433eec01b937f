import Engine

/// One message of a chain's history (what `previous_response_id` continues): its role as the
/// chat template knows it (`user`, `assistant`, `system`, `developer`, `tool`) and its text; an
/// assistant's function calls, its reasoning (a thinking model's, which its template may render)
/// and a tool result's call id. Instructions are never part of it.
struct HistoryMessage: Codable, Sendable, Equatable {
    var role: String
    var content: String
    var toolCalls: [ToolCall]?
    var toolCallID: String?
    var reasoning: String?

    init(
        role: String, content: String, toolCalls: [ToolCall]? = nil, toolCallID: String? = nil,
        reasoning: String? = nil
    ) {
        self.role = role
        self.content = content
        self.toolCalls = toolCalls
        self.toolCallID = toolCallID
        self.reasoning = reasoning
    }

    /// Items as history: messages as they are, a `function_call` joined to the assistant message
    /// before it (or a new one without text), a `function_call_output` a `tool` message. A
    /// `reasoning` item goes with the assistant turn after it (as a response's output has it,
    /// reasoning first); one that another message follows instead is dropped.
    static func of(_ items: [ResponseItem], after earlier: [HistoryMessage] = []) -> [HistoryMessage] {
        var out = earlier
        var reasoning: String?
        for item in items {
            switch item.type {
            case "reasoning":
                reasoning = (reasoning.map { $0 + "\n\n" } ?? "") + item.text
            case "function_call":
                guard let call = item.call else { continue }
                if reasoning == nil, let last = out.last, last.role == "assistant", last.toolCallID == nil {
                    out[out.count - 1].toolCalls = (last.toolCalls ?? []) + [call]
                } else {
                    out.append(HistoryMessage(role: "assistant", content: "", toolCalls: [call], reasoning: reasoning))
                    reasoning = nil
                }
            case "function_call_output":
                out.append(HistoryMessage(role: "tool", content: item.output ?? "", toolCallID: item.callID))
            default:
                out.append(
                    HistoryMessage(
                        role: item.role, content: item.text, reasoning: item.role == "assistant" ? reasoning : nil))
                reasoning = nil
            }
        }
        return Array(out.dropFirst(earlier.count))
    }

    /// The message as the chat template sees it.
    var chatMessage: ChatMessage {
        let r: ChatMessage.Role =
            switch role {
            case "assistant": .assistant
            case "user": .user
            case "tool": .tool
            default: .system
            }
        var m = ChatMessage(role: r, content: content)
        m.toolCalls = toolCalls
        m.toolCallID = toolCallID
        m.reasoning = reasoning
        return m
    }

    /// Bytes it holds, for the transcript quota.
    var bytes: Int {
        content.utf8.count + (reasoning?.utf8.count ?? 0)
            + (toolCalls ?? []).reduce(0) { $0 + $1.arguments.utf8.count }
    }
}
