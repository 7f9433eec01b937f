import Engine

/// One request to a session, as the session sees it.
public struct TurnRequest: Sendable {
    public var id: String
    public var prompt: String
    public var onBusy: BusyPolicy
    public var onCancel: CancelPolicy
    public var priority: TurnPriority
    public var parameters: TurnParameters

    public init(
        id: String, prompt: String, onBusy: BusyPolicy = .queue, onCancel: CancelPolicy = .keep,
        priority: TurnPriority = .interactive, parameters: TurnParameters = .init()
    ) {
        self.id = id
        self.prompt = prompt
        self.onBusy = onBusy
        self.onCancel = onCancel
        self.priority = priority
        self.parameters = parameters
    }
}
