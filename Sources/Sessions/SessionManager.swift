import Foundation
import Telemetry

/// All sessions of a server: creates them, finds them, deletes them, and brings them back from
/// the store at start-up. Also knows which session a request id belongs to, for
/// `POST /v1/requests/{id}/cancel`.
public final class SessionManager: Sendable {
    public let environment: SessionEnvironment
    private let sessions = Locked<[String: Session]>([:])
    private let requestIndex = Locked<[String: String]>([:])

    /// Loads every stored session. Responses in flight when the server last stopped are already
    /// `interrupted` (the store marks them when it opens).
    public init(environment: SessionEnvironment) throws(StoreError) {
        self.environment = environment
        let stored = try environment.store.loadAll()
        var loaded: [String: Session] = [:]
        var index: [String: String] = [:]
        for s in stored {
            loaded[s.id] = Session(stored: s, env: environment)
            for e in s.entries { if let r = e.requestID { index[r] = s.id } }
        }
        sessions.withLock { $0 = loaded }
        requestIndex.withLock { $0 = index }
    }

    public var count: Int { sessions.withLock { $0.count } }

    public func create(
        instructions: String?, onBusy: BusyPolicy, options: String?, owner: String? = nil
    ) throws(StoreError) -> Session {
        let id = "sess_" + Self.randomHex(12)
        let entries =
            instructions.map { [TranscriptEntry(position: 0, kind: .instructions, content: $0)] } ?? []
        let stored = StoredSession(
            id: id, created: Int(Date().timeIntervalSince1970), onBusy: onBusy, options: options, entries: entries,
            owner: owner)
        try environment.store.createSession(stored)
        let session = Session(stored: stored, env: environment)
        sessions.withLock { $0[id] = session }
        environment.logger.info("session created", ["session_id": id])
        return session
    }

    public func session(_ id: String) -> Session? { sessions.withLock { $0[id] } }

    /// How many sessions `owner` has.
    public func count(ownedBy owner: String?) -> Int {
        sessions.withLock { $0.values.filter { $0.owner == owner }.count }
    }

    /// Every session, oldest first.
    public var all: [Session] {
        sessions.withLock { Array($0.values) }.sorted { ($0.created, $0.id) < ($1.created, $1.id) }
    }

    /// Admits a request to a session and remembers where it lives.
    public func admit(_ request: TurnRequest, to session: Session, model: any SessionModel) async throws(SessionError) {
        try await session.admit(request, model: model)
        requestIndex.withLock { $0[request.id] = session.id }
    }

    public func session(forRequest requestID: String) -> Session? {
        guard let sid = requestIndex.withLock({ $0[requestID] }) else { return nil }
        return session(sid)
    }

    /// Cancels what runs or waits in the session, awaits it, then deletes it. False if unknown.
    public func delete(_ id: String) async throws(StoreError) -> Bool {
        guard let session = sessions.withLock({ $0.removeValue(forKey: id) }) else { return false }
        await session.close()
        let known = await session.knownRequestIDs
        requestIndex.withLock { index in for r in known { index[r] = nil } }
        try environment.store.deleteSession(id)
        environment.logger.info("session deleted", ["session_id": id])
        return true
    }

    static func randomHex(_ bytes: Int) -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }
}
