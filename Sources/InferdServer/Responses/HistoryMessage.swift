import Engine

/// One message of a chain's history (what `previous_response_id` continues): its role as the
/// chat template knows it (`user`, `assistant`, `system`, `developer`, `tool`) and its text; an
/// assistant's function calls and a tool result's call id. Instructions are never part of it.
struct HistoryMessage: Codable, Sendable, Equatable {
    var role: String
    var content: String
    var toolCalls: [ToolCall]?
    var toolCallID: String?

    init(role: String, content: String, toolCalls: [ToolCall]? = nil, toolCallID: String? = nil) {
        self.role = role
        self.content = content
        self.toolCalls = toolCalls
        self.toolCallID = toolCallID
    }

    /// Items as history: messages as they are, a `function_call` joined to the assistant message
    /// before it (or a new one without text), a `function_call_output` a `tool` message.
    static func of(_ items: [ResponseItem], after earlier: [HistoryMessage] = []) -> [HistoryMessage] {
        var out = earlier
        for item in items {
            switch item.type {
            case "function_call":
                guard let call = item.call else { continue }
                if let last = out.last, last.role == "assistant", last.toolCallID == nil {
                    out[out.count - 1].toolCalls = (last.toolCalls ?? []) + [call]
                } else {
                    out.append(HistoryMessage(role: "assistant", content: "", toolCalls: [call]))
                }
            case "function_call_output":
                out.append(HistoryMessage(role: "tool", content: item.output ?? "", toolCallID: item.callID))
            default:
                out.append(HistoryMessage(role: item.role, content: item.text))
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
        return m
    }

    /// Bytes it holds, for the transcript quota.
    var bytes: Int { content.utf8.count + (toolCalls ?? []).reduce(0) { $0 + $1.arguments.utf8.count } }
}
