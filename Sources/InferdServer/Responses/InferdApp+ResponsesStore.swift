import Backend
import Engine
import Foundation
import HTTPServer
import Sessions

/// Stored responses: retrieve (or resume its stream), delete, list its input items, cancel a
/// background one. A response is visible only to the API key that created it; to any other it
/// answers exactly as an unknown id (404), so its existence is not revealed.
extension InferdApp {
    static let interruptedMessage =
        "the server stopped while this response was running; it was not run again (no automatic retry)"
    static let interruptedCode = "server_stopped"

    /// How often a replica looks in a shared store for what another replica asked or finished: a
    /// cancel sent elsewhere for a background response it runs, or the end of a response that
    /// runs elsewhere (a stream resumed, or a cancel awaited, on another replica).
    static let storePollInterval: Duration = .milliseconds(200)
    /// How long a cancel sent to another replica than the owner waits for the owner to stop it.
    static let remoteCancelTimeout: Duration = .seconds(30)

    /// The stored responses' store: `store_url`'s PostgreSQL (shared by the replicas), else the
    /// sessions' SQLite file in `data_dir`.
    public static func openResponseStore(_ c: ServerConfiguration) throws(StoreError) -> any ResponseStoring {
        guard !c.storeURL.isEmpty else { return try ResponseStore.open(dataDir: c.dataDir) }
        return try PostgresResponseStore.open(
            url: c.storeURL, password: try storePassword(c), replica: c.effectiveReplicaId)
    }

    /// A background response's generation, settled. On a shared store, a watcher beside it stops
    /// it when another replica recorded a cancel in the store (`requestCancel`), as a local cancel
    /// would, and writes its status when it changes (`queued` → `in_progress`), so the other
    /// replicas read where it is; its text is written when it ends.
    func settleBackground(_ ticket: PendingGeneration, run: ResponseRun, requestID: String) async -> Result<
        GenerationResult, HTTPError
    > {
        guard responseStore.isShared else { return await settle(ticket, requestID: requestID) }
        return await withTaskGroup(of: Result<GenerationResult, HTTPError>?.self) { group in
            group.addTask { await self.settle(ticket, requestID: requestID) }
            group.addTask {
                var written = run.record.response.status
                while (try? await Task.sleep(for: Self.storePollInterval)) != nil {
                    if (try? await self.responseStore.isCancelRequested(run.id)) == true { break }
                    let now = run.record
                    // The finisher writes the end; this Task has stopped before it does.
                    if now.response.status != written, !now.response.isFinished {
                        await self.persist(now, applyRetention: false)
                        written = now.response.status
                    }
                }
                return nil
            }
            var result: Result<GenerationResult, HTTPError>?
            while let next = await group.next() {
                // Either the generation ended (stop watching) or a cancel was asked (stop it).
                group.cancelAll()
                if let next { result = next }
            }
            return result ?? .failure(.serviceUnavailable("the response ended without a result", code: "server_error"))
        }
    }

    /// Re-reads `id` from the store until it has finished, or the calling Task is cancelled, or
    /// `timeout` passes; the last record read.
    func awaitStoredEnd(_ id: String, _ request: HTTPRequest, timeout: Duration?) async throws -> ResponseRecord {
        let start = ContinuousClock.now
        var record = try await loadResponse(id, request, param: "response_id")
        while !record.response.isFinished, liveResponses.run(id) == nil {
            if let timeout, ContinuousClock.now - start > timeout { break }
            guard (try? await Task.sleep(for: Self.storePollInterval)) != nil else { break }
            record = try await loadResponse(id, request, param: "response_id")
        }
        return record
    }

    /// At shutdown, after the HTTP server has drained: stops the background responses still
    /// running and records each as `failed` (`server_stopped`), as a restart would find them.
    public func stopBackgroundResponses() async {
        for task in liveResponses.beginStopping() {
            task.cancel()
            await task.value
        }
    }

    /// The stored record of `id` as `request` may see it, else 404 naming `param`.
    func loadResponse(_ id: String, _ request: HTTPRequest, param: String) async throws -> ResponseRecord {
        let stored: StoredResponse?
        do {
            stored = try await responseStore.load(id)
        } catch {
            throw OpenAIError(Self.httpError(for: error))
        }
        guard let stored, mayAccess(ownedBy: stored.owner, request),
            var record = try? JSONDecoder().decode(ResponseRecord.self, from: Data(stored.payload.utf8))
        else {
            throw OpenAIError(
                status: 404, message: "No response found with id '\(id)'.", type: "invalid_request_error",
                param: param, code: "response_not_found")
        }
        if stored.interrupted {
            record.response.status = "failed"
            record.response.error = .init(code: Self.interruptedCode, message: Self.interruptedMessage)
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
    func currentResponse(_ id: String, _ request: HTTPRequest, param: String = "response_id") async throws -> (
        ResponseRecord, ResponseRun?
    ) {
        if let run = liveResponses.run(id) {
            let record = run.record
            if record.response.store, mayAccess(ownedBy: record.owner, request) { return (record, run) }
        }
        return (try await loadResponse(id, request, param: param), nil)
    }

    /// `GET /v1/responses/{id}`; with `stream=true`, its events after `starting_after` (from the
    /// first without it), live ones following while it still runs.
    func getResponse(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        if let unknown = request.query.keys.sorted().first(where: {
            !["stream", "starting_after", "include", "include_obfuscation"].contains($0)
        }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: "unknown_parameter")
        }
        if let include = request.query["include"], !include.isEmpty {
            throw OpenAIError.unsupported("include is not supported: no extra output is available", param: "include")
        }
        let stream: Bool
        switch request.query["stream"] {
        case nil, "false": stream = false
        case "true": stream = true
        case let other?: throw OpenAIError.invalid("stream must be true or false, got '\(other)'", param: "stream")
        }
        var after = -1
        if let raw = request.query["starting_after"] {
            guard stream else {
                throw OpenAIError.invalid("starting_after applies only with stream=true", param: "starting_after")
            }
            guard let n = Int(raw), n >= 0 else {
                throw OpenAIError.invalid(
                    "starting_after must be a sequence number (0 or more), got '\(raw)'", param: "starting_after")
            }
            after = n
        }
        let (record, live) = try await currentResponse(id, request)
        guard stream else { return .json(record.response) }
        let start = after
        if live == nil, !record.response.isFinished {
            // Running on another replica (shared store): its events are derived from the stored
            // record once it has ended there (a stream resumed elsewhere catches up in one go).
            return .eventStream { [self] stream in
                guard let final = try? await awaitStoredEnd(id, request, timeout: nil), final.response.isFinished
                else { return }
                let run = ResponseRun(final)
                let token = run.subscribe(after: start) { e in stream.send(event: e.type, data: Self.json(e)) }
                run.unsubscribe(token)
            }
        }
        let run = live ?? ResponseRun(record)
        return .eventStream { stream in
            let (events, continuation) = AsyncStream.makeStream(of: ResponseStreamEvent.self)
            let token = run.subscribe(after: start) { e in
                continuation.yield(e)
                if e.isTerminal { continuation.finish() }
            }
            if run.record.response.isFinished { continuation.finish() }
            // The GET's own Task: its client leaving ends this loop, never the response.
            for await e in events { stream.send(event: e.type, data: Self.json(e)) }
            run.unsubscribe(token)
        }
    }

    /// `DELETE /v1/responses/{id}`: a finished response only (cancel a running one first).
    func deleteResponse(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let (record, _) = try await currentResponse(id, request)
        if !record.response.isFinished {
            throw OpenAIError(
                status: 409, message: "response \(id) is still \(record.response.status); cancel it first",
                type: "invalid_request_error", param: "response_id", code: "response_in_progress")
        }
        do {
            try await responseStore.delete(id)
        } catch {
            throw OpenAIError(Self.httpError(for: error))
        }
        sessions.environment.caches.drop(Self.cacheOwner(id))
        return .json(DeletedResponse(id: id))
    }

    /// `GET /v1/responses/{id}/input_items`: the response's input items, paged as OpenAI's lists
    /// (`after`, `limit`, `order`, newest first unless `order=asc`).
    func responseInputItems(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        var query: ListQuery
        do {
            query = try ListQuery(request.query.filter { $0.key != "include" })
        } catch {
            throw OpenAIError(error)
        }
        if request.query["order"] == nil { query.order = .desc }
        if let include = request.query["include"], !include.isEmpty {
            throw OpenAIError.unsupported("include is not supported: no extra output is available", param: "include")
        }
        let (record, _) = try await currentResponse(id, request)
        let page: (items: [ResponseItem], hasMore: Bool)
        do {
            page = try query.page(of: record.input, id: \.id)
        } catch {
            throw OpenAIError(error)
        }
        return .json(ListPage(data: page.items, hasMore: page.hasMore, id: \.id))
    }

    /// `POST /v1/responses/{id}/cancel`: stops a background response and answers once it has
    /// stopped (its stored status `cancelled`, its text the last snapshot). Idempotent: a finished
    /// one is returned unchanged. A foreground response belongs to its connection: 400.
    func cancelResponse(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let (record, _) = try await currentResponse(id, request)
        guard record.response.background else {
            throw OpenAIError.invalid(
                "only background responses can be cancelled; a foreground response stops when its client disconnects",
                param: "response_id", code: "not_background")
        }
        if let task = liveResponses.task(id) {
            task.cancel()
            await task.value
        } else if !record.response.isFinished, responseStore.isShared {
            // It runs on another replica: ask it through the store (it polls the flag), then
            // answer once it has stopped there, as a local cancel does.
            do {
                _ = try await responseStore.requestCancel(id)
            } catch {
                throw OpenAIError(Self.httpError(for: error))
            }
            let final = try await awaitStoredEnd(id, request, timeout: Self.remoteCancelTimeout)
            guard final.response.isFinished else {
                throw OpenAIError(
                    status: 504,
                    message:
                        "response \(id) runs on another replica, which has not confirmed the cancel yet; the request stands, retry to see its state",
                    type: "server_error", param: "response_id", code: "cancel_pending")
            }
            return .json(final.response)
        }
        return .json(try await currentResponse(id, request).0.response)
    }
}

/// The answer to `DELETE /v1/responses/{id}`.
struct DeletedResponse: Encodable, Sendable {
    var id: String
    var object = "response"
    var deleted = true
}
