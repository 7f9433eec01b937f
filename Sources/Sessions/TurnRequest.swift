import GenerationVocabulary

/// One request to a session, as the session sees it.
public struct TurnRequest: Sendable {
    public var id: String
    /// The user's message; empty for a turn that only gives tool results.
    public var prompt: String
    /// Results of the calls of earlier responses (`tool` messages), before the prompt.
    public var toolResults: [ChatMessage] = []
    public var onBusy: BusyPolicy
    public var onCancel: CancelPolicy
    public var priority: TurnPriority
    public var parameters: TurnParameters
    /// When the whole request (the session's queue, the engine's queue, prompt and generation)
    /// must be over; nil: no limit. See `Session.run`.
    public var deadline: ContinuousClock.Instant?
    /// Set when the request edits the transcript instead of generating (`prompt` is then unused).
    public var edit: TranscriptEdit?

    public init(
        id: String, prompt: String, onBusy: BusyPolicy = .queue, onCancel: CancelPolicy = .keep,
        priority: TurnPriority = .interactive, parameters: TurnParameters = .init(),
        deadline: ContinuousClock.Instant? = nil
    ) {
        self.id = id
        self.prompt = prompt
        self.onBusy = onBusy
        self.onCancel = onCancel
        self.priority = priority
        self.parameters = parameters
        self.deadline = deadline
    }

    /// A transcript edit as a request of the session's queue. `on_busy` is the session's, except
    /// that an edit never supersedes a running turn: `replace` waits as `queue` does.
    public static func editing(_ edit: TranscriptEdit, id: String, onBusy: BusyPolicy) -> TurnRequest {
        var request = TurnRequest(id: id, prompt: "", onBusy: onBusy == .reject ? .reject : .queue)
        request.edit = edit
        return request
    }
}
