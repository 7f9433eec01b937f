import Cancellation
import GenerationVocabulary

/// How a request ended, exactly as the transcript records it.
public struct TurnOutcome: Sendable, Equatable {
    public enum Status: String, Sendable {
        case completed, cancelled, failed
    }

    public var requestID: String
    public var sessionID: String
    public var status: Status
    /// Set when cancelled.
    public var reason: CancellationReason?
    /// Completed: the whole answer. Cancelled: the last snapshot published ("" when nothing was).
    public var content: String
    /// stop, length or cancelled; nil when the generation never ran or failed.
    public var finishReason: FinishReason?
    public var usage: GenerationUsage?
    /// The generation's timings, when it ran.
    public var timings: GenerationTimings?
    /// Set when failed.
    public var error: SessionError?
    /// With a constraint: whether the answer ended where its grammar may end (nil without one).
    public var constraintSatisfied: Bool?
    /// The stop string that ended the answer (`GenerationResult.stopSequence`).
    public var stopSequence: String?
    /// A transcript edit: the entries it added (empty for a deletion and for turns).
    public var addedEntries: [TranscriptEntry] = []
    /// Steps the engine computed after the stop was requested.
    public var stepsAfterCancel: Int = 0

    static func cancelledUnstarted(_ id: String, session: String, reason: CancellationReason) -> TurnOutcome {
        TurnOutcome(
            requestID: id, sessionID: session, status: .cancelled, reason: reason, content: "",
            finishReason: .cancelled)
    }
}
