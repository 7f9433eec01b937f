import Cancellation
import Telemetry

/// Shared between a request's owner (its connection) and the code running in its Task.
/// The owner records the reason before it cancels the Task, so code that observes
/// cancellation can tell a disconnect from a shutdown.
///
/// It also carries request-scoped values that outer code (a router middleware) sets for the
/// handlers it wraps, e.g. who the caller is. The HTTP layer gives them no meaning; the ones set
/// with `logged: true` are added to the request's "request completed" log line.
public final class RequestContext: Sendable {
    private let reason = Locked<CancellationReason?>(nil)
    private let values = Locked<[String: (value: String, logged: Bool)]>([:])

    public init() {}

    /// A request-scoped value set by `set(_:_:logged:)`, or nil.
    public func value(_ name: String) -> String? { values.withLock { $0[name]?.value } }

    /// Sets a request-scoped value; `logged` values appear on the completion log line.
    public func set(_ name: String, _ value: String, logged: Bool = false) {
        values.withLock { $0[name] = (value, logged) }
    }

    /// The values to log, as key=value pairs.
    var loggedValues: [String: String] {
        values.withLock { $0.compactMapValues { $0.logged ? $0.value : nil } }
    }

    public var cancellationReason: CancellationReason? { reason.withLock { $0 } }

    /// Records `newReason` unless one is already set; returns true if it was recorded.
    @discardableResult
    func setCancellationReason(_ newReason: CancellationReason) -> Bool {
        reason.withLock {
            if $0 != nil { return false }
            $0 = newReason
            return true
        }
    }
}
