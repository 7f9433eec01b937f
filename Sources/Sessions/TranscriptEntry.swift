import GenerationVocabulary

/// One entry of a session's transcript. The transcript is the truth of a conversation:
/// the KV cache is rebuilt from it whenever it is dropped.
public struct TranscriptEntry: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// A turn's entries: `prompt` and `response` share a request id and enter together.
        case instructions, prompt, response
        /// Messages added by hand (OpenAI's `POST /v1/conversations/{id}/items`), one kind per
        /// role. Not `prompt`/`response`: those are a turn's pair, shown to the model according
        /// to how the turn ended and found by request id, while an added message belongs to no
        /// request and is always shown, with its own role (`developer` stays `developer`).
        case userItem = "user_item", assistantItem = "assistant_item", systemItem = "system_item"
        case developerItem = "developer_item"
        /// A tool's result (`tool_results` of a turn): answers a call of an earlier response by
        /// its id, shown to the model as a `tool` message. It enters with the turn that sent it
        /// (same request id) and is shown as the turn's prompt is.
        case toolResult = "tool_result"
        /// What a deleted entry leaves behind: no content, shown to nobody. It keeps the
        /// position taken, so a position (an item's id) never names a second entry, even after a
        /// restart, where the next position is the highest stored one plus one.
        case deleted

        /// The kind of an added message with this role (user, assistant, system or developer).
        public static func item(role: String) -> Kind? {
            switch role {
            case "user": .userItem
            case "assistant": .assistantItem
            case "system": .systemItem
            case "developer": .developerItem
            default: nil
            }
        }

        /// The role of an added message; nil for the other kinds.
        public var itemRole: String? {
            switch self {
            case .userItem: "user"
            case .assistantItem: "assistant"
            case .systemItem: "system"
            case .developerItem: "developer"
            case .instructions, .prompt, .response, .toolResult, .deleted: nil
            }
        }
    }

    /// The state of a response entry.
    public enum Status: String, Sendable {
        /// Being generated now (only ever seen while the server runs).
        case inProgress = "in_progress"
        case completed, cancelled, failed
        /// Was in progress when the server stopped without recording its end (crash, kill -9).
        case interrupted
    }

    /// Order within the session; gaps are allowed (a discarded turn leaves one).
    public var position: Int
    public var kind: Kind
    public var content: String
    public var requestID: String?
    public var status: Status?
    public var finishReason: String?
    public var reason: String?
    /// A response's calls (complete ones only: a call cut off is never recorded as a call).
    public var toolCalls: [ToolCall]?
    /// A `tool_result`: the call it answers.
    public var toolCallID: String?
    /// A response's reasoning (a thinking model's `<think>` text), kept apart from `content`.
    public var reasoning: String?

    public init(
        position: Int, kind: Kind, content: String, requestID: String? = nil, status: Status? = nil,
        finishReason: String? = nil, reason: String? = nil, toolCalls: [ToolCall]? = nil, toolCallID: String? = nil,
        reasoning: String? = nil
    ) {
        self.toolCalls = toolCalls
        self.toolCallID = toolCallID
        self.reasoning = reasoning
        self.position = position
        self.kind = kind
        self.content = content
        self.requestID = requestID
        self.status = status
        self.finishReason = finishReason
        self.reason = reason
    }
}
