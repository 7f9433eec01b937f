import Backend
import Cancellation
import GenerationVocabulary

extension Session {
    /// The conversation the model sees, in transcript order. A turn counts when its response
    /// completed or was cancelled (with what was shown); failed and interrupted turns stay in the
    /// transcript for the record but are not shown to the model. A turn still in progress counts
    /// its prompt. Messages added by hand always count, with their role; so does each half of a
    /// turn whose other half was deleted by hand (a prompt alone is a user message, a finished
    /// response alone an assistant message). Deleted entries are shown to nobody.
    func conversationMessages() -> [ChatMessage] {
        var messages: [ChatMessage] = []
        var responses: [String: TranscriptEntry] = [:]
        for e in entries where e.kind == .response {
            if let r = e.requestID { responses[r] = e }
        }
        for e in entries {
            switch e.kind {
            case .instructions, .systemItem, .developerItem:
                messages.append(ChatMessage(role: .system, content: e.content))
            case .userItem:
                messages.append(ChatMessage(role: .user, content: e.content))
            case .assistantItem:
                messages.append(ChatMessage(role: .assistant, content: e.content))
            case .prompt, .toolResult:
                switch e.requestID.flatMap({ responses[$0] })?.status {
                case .completed, .cancelled, .inProgress, nil:
                    messages.append(
                        e.kind == .prompt
                            ? ChatMessage(role: .user, content: e.content)
                            : ChatMessage(role: .tool, content: e.content, toolCallID: e.toolCallID))
                default:
                    break
                }
            case .response:
                // A response follows its prompt (the two take adjacent positions).
                if e.status == .completed || e.status == .cancelled {
                    messages.append(
                        ChatMessage(
                            role: .assistant, content: e.content, toolCalls: e.toolCalls, reasoning: e.reasoning))
                }
            case .deleted:
                break
            }
        }
        return messages
    }

    public func snapshot(backend model: (any GenerationBackend)?) -> SessionSnapshot {
        SessionSnapshot(
            id: id, created: created, onBusy: onBusy, options: options, responding: queue.active != nil,
            activeRequest: queue.active, queued: queue.waitingCount, entries: entries.filter { $0.kind != .deleted },
            contextTokens: model.flatMap {
                try? $0.prepare(.conversation(instructions: nil, messages: conversationMessages())).tokenCount
            },
            contextLimit: model?.contextLength)
    }

    public var transcript: [TranscriptEntry] { entries }

    /// How a request recorded only in the transcript (before a restart) ended.
    func recordedOutcome(_ requestID: String) -> TurnOutcome? {
        guard let e = entries.first(where: { $0.kind == .response && $0.requestID == requestID }) else { return nil }
        let status: TurnOutcome.Status =
            switch e.status {
            case .completed: .completed
            case .cancelled: .cancelled
            default: .failed
            }
        return TurnOutcome(
            requestID: requestID, sessionID: id, status: status,
            reason: e.reason.flatMap(CancellationReason.init(rawValue:)),
            content: e.content, finishReason: e.finishReason.flatMap(FinishReason.init(rawValue:)))
    }
}

extension Session {
    /// The ids of the calls the model can see answered: those of shown responses.
    public func visibleCallIDs() -> Set<String> {
        Set(conversationMessages().lazy.compactMap(\.toolCalls).joined().map(\.id))
    }
}
