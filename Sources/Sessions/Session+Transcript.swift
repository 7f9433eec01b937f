import Backend
import Cancellation
import Engine

extension Session {
    /// The conversation the model sees. A turn counts when its response completed or was
    /// cancelled (with what was shown); failed and interrupted turns stay in the transcript
    /// for the record but are not shown to the model. A turn still in progress counts its prompt.
    func conversationMessages() -> [ChatMessage] {
        var messages: [ChatMessage] = []
        var responses: [String: TranscriptEntry] = [:]
        for e in entries where e.kind == .response {
            if let r = e.requestID { responses[r] = e }
        }
        for e in entries {
            switch e.kind {
            case .instructions:
                messages.append(ChatMessage(role: .system, content: e.content))
            case .prompt:
                let response = e.requestID.flatMap { responses[$0] }
                switch response?.status {
                case .completed, .cancelled:
                    messages.append(ChatMessage(role: .user, content: e.content))
                    messages.append(ChatMessage(role: .assistant, content: response!.content))
                case .inProgress:
                    messages.append(ChatMessage(role: .user, content: e.content))
                default:
                    break
                }
            case .response:
                break
            }
        }
        return messages
    }

    public func snapshot(backend model: (any GenerationBackend)?) -> SessionSnapshot {
        SessionSnapshot(
            id: id, created: created, onBusy: onBusy, options: options, responding: queue.active != nil,
            activeRequest: queue.active, queued: queue.waitingCount, entries: entries,
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
