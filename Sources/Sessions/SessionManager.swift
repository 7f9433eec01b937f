import Backend
import Foundation
import Telemetry

/// All sessions of a server: creates them, finds them, deletes them, and brings them back from
/// the store at start-up. Also knows which session a live or recently ended request id belongs
/// to, for `POST /v1/requests/{id}/cancel` (see `RequestIndex`: the index is bounded, and each
/// owner has its own namespace of ids: a request is indexed under its session's owner).
public final class SessionManager: Sendable {
    public let environment: SessionEnvironment
    private let sessions = Locked<[String: Session]>([:])
    private let requestIndex: Locked<RequestIndex>

    /// Request ids kept in the index after they end, by default.
    public static let defaultRecentRequests = 4096

    /// Loads every stored session. Responses in flight when the server last stopped are already
    /// `interrupted` (the store marks them when it opens). `recentRequests`: how many ended
    /// request ids `session(forRequest:)` still finds.
    public init(environment: SessionEnvironment, recentRequests: Int = defaultRecentRequests) throws(StoreError) {
        self.environment = environment
        requestIndex = Locked(RequestIndex(endedCapacity: recentRequests))
        let stored = try environment.store.loadAll()
        var loaded: [String: Session] = [:]
        for s in stored { loaded[s.id] = makeSession(s) }
        sessions.withLock { $0 = loaded }
        // The most recent responses on record stay findable by request id across a restart
        // (a late cancel still says how they ended); older ones only through their session.
        let recorded = stored.flatMap { s in
            s.entries.compactMap { e in
                e.kind == .response ? e.requestID.map { (s.created, e.position, $0, s.id, s.owner) } : nil
            }
        }
        let recent = recorded.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.suffix(recentRequests)
        requestIndex.withLock { index in
            for (_, _, request, session, owner) in recent
            where index.admitted(request, owner: owner, session: session) {
                index.ended(request, owner: owner)
            }
        }
    }

    private func makeSession(_ stored: StoredSession) -> Session {
        Session(stored: stored, env: environment) { [requestIndex, owner = stored.owner] id in
            requestIndex.withLock { $0.ended(id, owner: owner) }
        }
    }

    /// Request ids indexed now (live plus recently ended); never more than live + `recentRequests`.
    public var indexedRequests: Int { requestIndex.withLock { $0.count } }

    public var count: Int { sessions.withLock { $0.count } }

    public func create(
        instructions: String?, onBusy: BusyPolicy, options: String?, owner: String? = nil
    ) async throws(StoreError) -> Session {
        let id = "sess_" + Self.randomHex(12)
        let entries =
            instructions.map { [TranscriptEntry(position: 0, kind: .instructions, content: $0)] } ?? []
        let stored = StoredSession(
            id: id, created: Int(Date().timeIntervalSince1970), onBusy: onBusy, options: options, entries: entries,
            owner: owner)
        try await environment.store.createSession(stored)
        let session = makeSession(stored)
        sessions.withLock { $0[id] = session }
        environment.logger.info("session created", ["session_id": id])
        return session
    }

    public func session(_ id: String) -> Session? { sessions.withLock { $0[id] } }

    /// The session `id` as the store holds it now. With a store shared by several servers, a
    /// session created or changed by another one is read from the store (and one deleted there
    /// is gone here too); otherwise this is `session(_:)`.
    public func find(_ id: String) async throws(StoreError) -> Session? {
        guard environment.store.isShared else { return session(id) }
        guard let stored = try await environment.store.loadSession(id) else {
            if let gone = sessions.withLock({ $0.removeValue(forKey: id) }) {
                await gone.close()
                requestIndex.withLock { $0.removeSession(id) }
            }
            return nil
        }
        if let local = session(id) {
            await local.refreshIfIdle(from: stored)
            return local
        }
        return sessions.withLock { all in
            if let raced = all[id] { return raced }
            let made = makeSession(stored)
            all[id] = made
            return made
        }
    }

    /// How many sessions `owner` has.
    public func count(ownedBy owner: String?) -> Int {
        sessions.withLock { $0.values.filter { $0.owner == owner }.count }
    }

    /// Every session, oldest first.
    public var all: [Session] {
        sessions.withLock { Array($0.values) }.sorted { ($0.created, $0.id) < ($1.created, $1.id) }
    }

    /// Admits a request to a session and remembers where it lives, under the session's owner.
    /// Indexed before the session sees it, so a request that ends at once still leaves the index.
    public func admit(_ request: TurnRequest, to session: Session, backend model: any GenerationBackend)
        async throws(SessionError)
    {
        let owner = session.owner
        let indexed = requestIndex.withLock { $0.admitted(request.id, owner: owner, session: session.id) }
        do {
            try await session.admit(request, backend: model)
        } catch {
            if indexed { requestIndex.withLock { $0.refused(request.id, owner: owner) } }
            throw error
        }
    }

    /// With a store shared by several servers: takes in the sessions other servers created and
    /// lets go of those they deleted, so the list and the per-owner counts are the store's. A
    /// session taken in this way has no transcript yet: every use reads it first (`find`, or the
    /// turn's lease). Nothing to do with a store of this server's own.
    public func synchronize() async throws(StoreError) {
        guard environment.store.isShared else { return }
        // A session created here while the list was read is missing from it, yet not deleted:
        // only sessions older than the read (creation times are whole seconds) may be let go.
        let readStart = Int(Date().timeIntervalSince1970) - 1
        let stored = try await environment.store.listSessions()
        let ids = Set(stored.map(\.id))
        let gone = sessions.withLock { all in
            for s in stored where all[s.id] == nil { all[s.id] = makeSession(s) }
            let gone = all.filter { !ids.contains($0.key) && $0.value.created < readStart }.map(\.key)
            return gone.compactMap { all.removeValue(forKey: $0) }
        }
        for session in gone {
            await session.close()
            requestIndex.withLock { $0.removeSession(session.id) }
        }
    }

    /// `session(forRequest:owner:)`, and with a shared store also a request recorded by another server.
    public func find(forRequest requestID: String, owner: String?) async throws(StoreError) -> Session? {
        if let local = session(forRequest: requestID, owner: owner) { return local }
        guard environment.store.isShared,
            let sid = try await environment.store.sessionOfRequest(requestID, owner: owner)
        else {
            return nil
        }
        return try await find(sid)
    }

    /// The session of `owner`'s request `requestID` (owner: the session's owner, nil without keys);
    /// another owner's request with the same id is not found.
    public func session(forRequest requestID: String, owner: String?) -> Session? {
        guard let sid = requestIndex.withLock({ $0.session(for: requestID, owner: owner) }) else { return nil }
        return session(sid)
    }

    /// Cancels what runs or waits in the session, awaits it, then deletes it. False if unknown.
    public func delete(_ id: String) async throws(StoreError) -> Bool {
        guard let session = sessions.withLock({ $0.removeValue(forKey: id) }) else {
            // Created by another server on a shared store: deleted from the store only.
            guard environment.store.isShared, try await environment.store.loadSession(id) != nil else { return false }
            try await environment.store.deleteSession(id)
            environment.logger.info("session deleted", ["session_id": id])
            return true
        }
        await session.close()
        requestIndex.withLock { $0.removeSession(id) }
        try await environment.store.deleteSession(id)
        environment.logger.info("session deleted", ["session_id": id])
        return true
    }

    static func randomHex(_ bytes: Int) -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &g)) }.joined()
    }
}
