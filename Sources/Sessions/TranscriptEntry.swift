/// One entry of a session's transcript. The transcript is the truth of a conversation:
/// the KV cache is rebuilt from it whenever it is dropped.
public struct TranscriptEntry: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case instructions, prompt, response
    }

    /// The state of a response entry.
    public enum Status: String, Sendable {
        /// Being generated now (only ever seen while the server runs).
        case inProgress = "in_progress"
        case completed, cancelled, failed
        /// Was in progress when the server stopped without recording its end (crash, kill -9).
        case interrupted
    }

    /// Order within the session; gaps are allowed (a discarded turn leaves one).
    public var position: Int
    public var kind: Kind
    public var content: String
    public var requestID: String?
    public var status: Status?
    public var finishReason: String?
    public var reason: String?

    public init(
        position: Int, kind: Kind, content: String, requestID: String? = nil, status: Status? = nil,
        finishReason: String? = nil, reason: String? = nil
    ) {
        self.position = position
        self.kind = kind
        self.content = content
        self.requestID = requestID
        self.status = status
        self.finishReason = finishReason
        self.reason = reason
    }
}
