/// What `GET /v1/sessions/{id}` shows, taken in one actor turn so it is consistent.
public struct SessionSnapshot: Sendable {
    public var id: String
    public var created: Int
    public var onBusy: BusyPolicy
    public var options: String?
    public var responding: Bool
    public var activeRequest: String?
    public var queued: Int
    public var entries: [TranscriptEntry]
    /// Tokens the conversation fills (as the next prompt would start); nil without a model.
    public var contextTokens: Int?
    public var contextLimit: Int?
}
