import Engine

/// One request to a session, as the session sees it.
public struct TurnRequest: Sendable {
    public var id: String
    public var prompt: String
    public var onBusy: BusyPolicy
    public var onCancel: CancelPolicy
    public var priority: TurnPriority
    public var parameters: TurnParameters
    /// When the whole request (the session's queue, the engine's queue, prompt and generation)
    /// must be over; nil: no limit. See `Session.run`.
    public var deadline: ContinuousClock.Instant?

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
}
