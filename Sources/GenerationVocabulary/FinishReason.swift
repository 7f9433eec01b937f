public enum FinishReason: String, Sendable, Codable {
    /// An end-of-generation token or a stop string.
    case stop
    /// `maxTokens` reached.
    case length
    /// The caller cancelled; not an error.
    case cancelled
    /// The request's deadline passed while it ran; the content is what was generated until then.
    case timeout
}

extension FinishReason {
    /// The terminal event of a generation that ended this way.
    public var terminalEvent: GenerationEventName { self == .cancelled ? .cancelled : .completed }
}
