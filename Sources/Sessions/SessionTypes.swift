import Engine

/// What a new request does when its session is already answering (`on_busy`).
public enum BusyPolicy: String, Sendable, CaseIterable {
    /// Wait in order behind what runs (bounded by the session's queue limit).
    case queue
    /// Refuse while anything runs or waits.
    case reject
    /// The `.task(id:)` rule: stop what runs, await its end, then run the newest request;
    /// every older waiting request ends cancelled (reason `superseded`) without output.
    case replace
}

/// What happens to a turn's text when it is stopped while streaming (`on_cancel`).
public enum CancelPolicy: String, Sendable, CaseIterable {
    /// The transcript keeps the last snapshot sent, marked `cancelled`; the next turn sees it.
    case keep
    /// The turn leaves the transcript and the KV cache is rolled back to before it.
    case discard
}

/// Background requests start only when no interactive request waits.
public enum TurnPriority: String, Sendable, CaseIterable {
    case interactive
    case background
}

/// Why a request was stopped, as the owner that stopped it names it.
public struct CancelReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let clientDisconnected = CancelReason(rawValue: "client_disconnected")
    public static let cancelRequest = CancelReason(rawValue: "cancel_request")
    public static let superseded = CancelReason(rawValue: "superseded")
    public static let sessionDeleted = CancelReason(rawValue: "session_deleted")
    public static let shutdown = CancelReason(rawValue: "shutdown")

    public var description: String { rawValue }
}

/// How much to generate and how to sample, already validated by the caller.
public struct TurnParameters: Sendable {
    /// Nil: as much as fits, up to the server's default.
    public var maxTokens: Int?
    public var sampling: SamplingOptions
    public var stop: [String]
    public var ignoreEndOfGeneration: Bool

    public init(
        maxTokens: Int? = nil, sampling: SamplingOptions = .init(), stop: [String] = [],
        ignoreEndOfGeneration: Bool = false
    ) {
        self.maxTokens = maxTokens
        self.sampling = sampling
        self.stop = stop
        self.ignoreEndOfGeneration = ignoreEndOfGeneration
    }
}

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

/// What a request reports while it waits and runs. Snapshots are the whole answer so far.
public enum TurnEvent: Sendable {
    /// Waiting; `position` 1 is next. Sent again whenever the position changes.
    case queued(position: Int)
    /// The prompt is processed; the first token comes next.
    case started(promptTokens: Int, cachedTokens: Int)
    case snapshot(content: String)
}

/// How a request ended, exactly as the transcript records it.
public struct TurnOutcome: Sendable, Equatable {
    public enum Status: String, Sendable {
        case completed, cancelled, failed
    }

    public var requestID: String
    public var sessionID: String
    public var status: Status
    /// Set when cancelled.
    public var reason: CancelReason?
    /// Completed: the whole answer. Cancelled: the last snapshot published ("" when nothing was).
    public var content: String
    /// stop, length or cancelled; nil when the generation never ran or failed.
    public var finishReason: FinishReason?
    public var usage: GenerationUsage?
    /// Set when failed.
    public var error: SessionError?
    /// Steps the engine computed after the stop was requested.
    public var stepsAfterCancel: Int = 0

    static func cancelledUnstarted(_ id: String, session: String, reason: CancelReason) -> TurnOutcome {
        TurnOutcome(
            requestID: id, sessionID: session, status: .cancelled, reason: reason, content: "",
            finishReason: .cancelled)
    }
}

/// Errors of the session API, each with what the caller needs to act on it.
public enum SessionError: Error, Sendable, Equatable, CustomStringConvertible {
    case sessionNotFound(String)
    case requestNotFound(String)
    /// `on_busy: reject` while a request runs or waits.
    case busy(activeRequest: String?)
    /// `on_busy: queue` with `limit` requests already waiting.
    case queueFull(limit: Int)
    case duplicateRequest(String)
    /// The engine refused or failed the generation (context overflow, compute failure, …).
    case generation(GenerationError)
    /// The transcript store could not record the turn.
    case storage(String)

    public var description: String {
        switch self {
        case .sessionNotFound(let id): "no session \(id)"
        case .requestNotFound(let id): "no request \(id)"
        case .busy(let active): "the session is answering request \(active ?? "?") (on_busy is reject)"
        case .queueFull(let limit): "the session already has \(limit) requests waiting"
        case .duplicateRequest(let id): "request \(id) is already in this session"
        case .generation(let e): "\(e)"
        case .storage(let why): "the transcript could not be stored: \(why)"
        }
    }
}
