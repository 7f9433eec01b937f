/// Where sessions, transcripts and key ownership live durably. `TranscriptStore` (SQLite in
/// `data_dir`, the default) serves one server; `PostgresSessionStore` (`store_url`) is shared by
/// several servers (replicas) on one database.
///
/// Every write is one transaction: a turn's prompt and its `in_progress` response enter
/// together when the prompt is accepted, and the response takes its final content and status
/// in one update when the turn ends. A response still `in_progress` whose turn nobody runs
/// (the server died) is recorded `interrupted`.
public protocol SessionStore: Sendable {
    /// True when other servers may write the same sessions: a turn then holds a lease
    /// (`tryTurnLease`) and a session's transcript is re-read from the store before it runs.
    var isShared: Bool { get }
    /// Responses found in flight, with no server running them, when the store was opened (they
    /// are now `interrupted`).
    var interruptedOnOpen: Int { get }

    /// Every stored session with its transcript, oldest first. Start-up only: it blocks the
    /// calling thread.
    func loadAll() throws(StoreError) -> [StoredSession]
    /// Every session's settings and owner, without transcripts (entries empty), oldest first.
    func listSessions() async throws(StoreError) -> [StoredSession]
    /// One session with its transcript; nil when there is none (never created, or deleted).
    func loadSession(_ id: String) async throws(StoreError) -> StoredSession?
    func createSession(_ session: StoredSession) async throws(StoreError)
    /// A turn was accepted: its input entries (tool results, then the prompt) and the response's
    /// `in_progress` entry, together.
    func beginTurn(session: String, inputs: [TranscriptEntry], response: TranscriptEntry) async throws(StoreError)
    /// A terminal event: the response entry takes its final content and status.
    func finishTurn(session: String, response: TranscriptEntry) async throws(StoreError)
    /// A transcript edit by hand, in one transaction: the entries of `adding` enter, and each
    /// entry at a position of `deleting` becomes `deleted` (its content and request erased).
    func editTranscript(session: String, adding: [TranscriptEntry], deleting: [Int]) async throws(StoreError)
    /// A discarded turn leaves the transcript.
    func removeEntries(session: String, positions: [Int]) async throws(StoreError)
    func deleteSession(_ id: String) async throws(StoreError)
    /// The session of `owner` (nil: sessions without one) whose transcript records request
    /// `requestID`, if any: request ids are scoped by owner.
    func sessionOfRequest(_ requestID: String, owner: String?) async throws(StoreError) -> String?
    /// The right to run one turn of `session` now, or nil when another server holds it. Whoever
    /// holds it releases it when the turn is recorded; a server that dies loses it at once.
    /// Taking it also records `interrupted` any response left `in_progress` by a dead server.
    func tryTurnLease(session: String) async throws(StoreError) -> (any TurnLease)?
    /// Throws when the store cannot be reached now (for `/health`).
    func checkReachable() async throws(StoreError)
}

extension SessionStore {
    /// A turn of one prompt.
    public func beginTurn(session: String, prompt: TranscriptEntry, response: TranscriptEntry) async throws(StoreError)
    {
        try await beginTurn(session: session, inputs: [prompt], response: response)
    }
}

/// A held turn lease (see `SessionStore.tryTurnLease`).
public protocol TurnLease: Sendable {
    func release() async
}
