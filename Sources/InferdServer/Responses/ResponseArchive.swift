import Backend
import Engine
import Foundation
import HTTPServer
import Sessions
import Telemetry
import Timekeeping

/// The responses a server keeps: the stored ones (`ResponseStoring`: SQLite, or PostgreSQL shared
/// by the replicas), the ones generating now (`ResponseRegistry`), and the KV caches a finished
/// response leaves for its successor (in the sessions' budget). A response is visible only to the
/// API key that created it; to any other it answers exactly as an unknown id (404).
struct ResponseArchive: Sendable {
    static let interruptedMessage =
        "the server stopped while this response was running; it was not run again (no automatic retry)"
    static let interruptedCode = ErrorCode.serverStopped

    /// How often a replica looks in a shared store for what another replica asked or finished: a
    /// cancel sent elsewhere for a background response it runs, or the end of a response that
    /// runs elsewhere (a stream resumed, or a cancel awaited, on another replica).
    static let storePollInterval: Duration = .milliseconds(200)

    let store: any ResponseStoring
    let live: ResponseRegistry
    let caches: KVCacheBudget
    let access: AccessControl
    let replicaId: String
    /// Retention by age: `response_max_age_days`.
    let maxAgeDays: Int
    /// Stored and background responses per key (`max_stored_responses_per_key`,
    /// `max_stored_responses`, `max_background_responses_per_key`), and message sizes.
    let quota: TenantQuota
    let logger: Logger
    /// Where polling a shared store waits and its timeouts are read.
    let clock: any TimeSource

    /// The KV-cache budget's name for the cache a response left for its successor.
    static func cacheOwner(_ responseID: String) -> String { "response:" + responseID }

    /// Writes a stored response (and applies retention when it starts); a failing database is
    /// logged, never fatal to the answer.
    func persist(_ record: ResponseRecord, applyRetention: Bool = true) async {
        guard record.response.store else { return }
        do {
            try await store.save(
                StoredResponse(
                    id: record.response.id, owner: record.owner, createdAt: record.response.createdAt,
                    status: record.response.status, payload: WireJSON.string(record), replica: replicaId))
            if applyRetention, !record.response.isFinished {
                let cutoff = Int(Date().timeIntervalSince1970) - maxAgeDays * 86_400
                var dropped = try await store.prune(olderThan: cutoff)
                // Within its own quota: only this key's oldest finished ones make room, never another's.
                let held = try await store.holdings(of: record.owner)
                dropped += try await store.evictOldestFinished(of: record.owner, count: quota.evictions(after: held))
                for id in dropped { caches.drop(Self.cacheOwner(id)) }
            }
        } catch {
            logger.error("response store write failed", ["response_id": record.response.id, "error": "\(error)"])
        }
    }

    /// Before a response of `owner` is stored: 429 `quota_exceeded` when the key holds its quota
    /// of unfinished stored responses, or the store its total and the key nothing of its own to give up.
    func admitStored(owner: String?) async throws(OpenAIError) {
        let held: ResponseHoldings
        do {
            held = try await store.holdings(of: owner)
        } catch {
            throw OpenAIError(HTTPError(error))
        }
        if let refusal = quota.admitStoredResponse(held) { throw OpenAIError(HTTPError(refusal)) }
    }

    /// Makes `run` live; a background one only while its key runs fewer than its quota (checked
    /// and counted at once, so concurrent requests cannot pass it together).
    func goLive(_ run: ResponseRun) throws(OpenAIError) {
        let limit = quota
        if let refusal = live.add(run, admitting: { limit.admitBackgroundResponse(running: $0) }) {
            throw OpenAIError(HTTPError(refusal))
        }
    }

    /// The stored record of `id` as `request` may see it, else 404 naming `param`.
    func load(_ id: String, _ request: HTTPRequest, param: String) async throws(OpenAIError) -> ResponseRecord {
        let stored: StoredResponse?
        do {
            stored = try await store.load(id)
        } catch {
            throw OpenAIError(HTTPError(error))
        }
        guard let stored, access.mayAccess(ownedBy: stored.owner, request),
            var record = try? JSONDecoder().decode(ResponseRecord.self, from: Data(stored.payload.utf8))
        else {
            throw OpenAIError(
                status: 404, message: "No response found with id '\(id)'.", type: "invalid_request_error",
                param: param, code: .responseNotFound)
        }
        if stored.interrupted {
            record.response.status = "failed"
            record.response.error = .init(code: Self.interruptedCode.rawValue, message: Self.interruptedMessage)
            if record.started {
                record.response.output = record.response.output.map { item in
                    var i = item
                    i.status = "incomplete"
                    return i
                }
            }
        }
        return record
    }

    /// The live run of `id` (generating now) as `request` may see it, or its stored record.
    func current(_ id: String, _ request: HTTPRequest, param: String = "response_id") async throws(OpenAIError) -> (
        ResponseRecord, ResponseRun?
    ) {
        if let run = live.run(id) {
            let record = run.record
            if record.response.store, access.mayAccess(ownedBy: record.owner, request) { return (record, run) }
        }
        return (try await load(id, request, param: param), nil)
    }

    /// Re-reads `id` from the store until it has finished, or the calling Task is cancelled, or
    /// `timeout` passes; the last record read.
    func awaitStoredEnd(_ id: String, _ request: HTTPRequest, timeout: Duration?) async throws -> ResponseRecord {
        let start = clock.now
        var record = try await load(id, request, param: "response_id")
        while !record.response.isFinished, live.run(id) == nil {
            if let timeout, clock.now - start > timeout { break }
            guard (try? await clock.sleep(for: Self.storePollInterval)) != nil else { break }
            record = try await load(id, request, param: "response_id")
        }
        return record
    }

    /// Keeps a finished response's cache for its successor (under the sessions' budget), or lets
    /// it go and ends its reservation.
    func releaseCache(
        _ sequence: (any PredictorSequence)?, capacity: Int, responseID id: String, keep: Bool,
        backend: any GenerationBackend
    ) {
        guard keep, let sequence, let cache = backend.kvCache else {
            caches.drop(Self.cacheOwner(id))
            return
        }
        caches.checkIn(Self.cacheOwner(id), sequence: sequence, bytes: capacity * cache.kvBytesPerToken)
    }

    /// At shutdown, after the HTTP server has drained: stops the background responses still
    /// running and records each as `failed` (`server_stopped`), as a restart would find them.
    func stopBackgroundResponses() async {
        for task in live.beginStopping() {
            task.cancel()
            await task.value
        }
    }
}
