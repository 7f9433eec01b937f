import Telemetry

/// Injected pauses around the moment a turn's end is recorded (tests only; nil in production).
public final class SessionHooks: Sendable {
    public typealias Pause = @Sendable (_ requestID: String) async -> Void
    private let before = Locked<Pause?>(nil)
    private let after = Locked<Pause?>(nil)

    public init() {}

    /// Runs after the engine returned and before the session records how the turn ended.
    public var beforeRecord: Pause? {
        get { before.withLock { $0 } }
        set { before.withLock { $0 = newValue } }
    }
    /// Runs after the session recorded the end, before the requester is told.
    public var afterRecord: Pause? {
        get { after.withLock { $0 } }
        set { after.withLock { $0 = newValue } }
    }
}
