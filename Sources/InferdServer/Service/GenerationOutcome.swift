import Cancellation
import Engine
import HTTPServer
import Sessions

/// How a generation ended, whichever way it ran (a stateless request or a session's turn): what
/// every route answers from and what `GenerationService` counts and logs, once per generation.
struct GenerationOutcome: Sendable {
    enum Status: String, Sendable {
        case completed, cancelled, failed
    }

    var status: Status
    /// Completed: the whole answer. Cancelled: the last snapshot its client could see.
    var content: String
    /// stop, length or cancelled; nil when it failed or never ran.
    var finishReason: FinishReason?
    /// Zero when it never reached the backend.
    var usage = GenerationUsage(promptTokens: 0, completionTokens: 0, cachedTokens: 0)
    var timings: GenerationTimings?
    var stepsAfterCancel = 0
    /// With a constraint: whether the answer ended where its grammar may end.
    var constraintSatisfied: Bool?
    /// The request whose identical generation this one joined (single-flight).
    var sharedFrom: String?
    /// Why it was cancelled, when its owner said (a disconnect, a cancel request, a shutdown).
    var reason: CancellationReason?
    /// What the client is told when it failed.
    var error: HTTPError?
    /// The stop string that ended the answer, when the backend says (`GenerationResult.stopSequence`).
    var stopSequence: String?

    /// A backend's result; `reason` is asked only when it was cancelled.
    init(_ result: GenerationResult, reason: () -> CancellationReason?) {
        status = result.finishReason == .cancelled ? .cancelled : .completed
        content = result.content
        finishReason = result.finishReason
        usage = result.usage
        timings = result.timings
        stepsAfterCancel = result.stepsAfterCancel
        constraintSatisfied = result.constraintSatisfied
        sharedFrom = result.sharedFrom
        stopSequence = result.stopSequence
        self.reason = status == .cancelled ? reason() : nil
    }

    /// A session's turn as the session recorded it.
    init(_ turn: TurnOutcome) {
        switch turn.status {
        case .completed: status = .completed
        case .cancelled: status = .cancelled
        case .failed: status = .failed
        }
        content = turn.content
        finishReason = turn.status == .failed ? nil : turn.finishReason
        usage = turn.usage ?? usage
        timings = turn.timings
        stepsAfterCancel = turn.stepsAfterCancel
        constraintSatisfied = turn.constraintSatisfied
        stopSequence = turn.status == .completed ? turn.stopSequence : nil
        reason = turn.reason
        if turn.status == .failed { error = HTTPError(turn.error ?? .generation(.computeFailed("unknown"))) }
    }

    init(failure: HTTPError) {
        status = .failed
        content = ""
        error = failure
    }

    /// The reason as the wire spells it, `cancelled` when nobody said.
    var reasonName: String { reason?.rawValue ?? "cancelled" }

    /// The finish reason a completed answer reports (`stop` when the backend gave none).
    var wireFinishReason: String { (finishReason ?? .stop).rawValue }
}
