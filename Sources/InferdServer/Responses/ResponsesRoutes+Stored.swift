import Foundation
import HTTPServer
import Sessions

/// Stored responses: retrieve (or resume its stream), delete, list its input items, cancel a
/// background one. A response is visible only to the API key that created it; to any other it
/// answers exactly as an unknown id (404), so its existence is not revealed.
extension ResponsesRoutes {
    /// `GET /v1/responses/{id}`; with `stream=true`, its events after `starting_after` and after the
    /// `Last-Event-ID` header (an `EventSource` reconnecting; each event's SSE id is its sequence
    /// number), from the first without either, live ones following while it still runs.
    func get(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        if let unknown = request.query.keys.sorted().first(where: {
            !["stream", "starting_after", "include", "include_obfuscation"].contains($0)
        }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: .unknownParameter)
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
        // An EventSource reconnecting sends the id of the last event it got; with `starting_after`
        // on the same URL, the later of the two counts (no event is sent twice).
        if stream, let raw = request.headers["Last-Event-ID"]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty {
            guard let n = Int(raw), n >= 0 else {
                throw OpenAIError.invalid(
                    "Last-Event-ID must be the id of an event of this stream (a sequence number), got '\(raw)'",
                    param: "Last-Event-ID")
            }
            after = max(after, n)
        }
        let (record, live) = try await archive.current(id, request)
        guard stream else { return .json(record.response) }
        let start = after
        if live == nil, !record.response.isFinished {
            // Running on another replica (shared store): its events are derived from the stored
            // record once it has ended there (a stream resumed elsewhere catches up in one go).
            return .eventStream { [archive] stream in
                guard let final = try? await archive.awaitStoredEnd(id, request, timeout: nil),
                    final.response.isFinished
                else { return }
                let run = ResponseRun(final)
                let token = run.subscribe(after: start) { e in ResponseArchive.send(e, to: stream) }
                run.unsubscribe(token)
            }
        }
        let run = live ?? ResponseRun(record)
        return .eventStream { stream in await ResponseArchive.follow(run, after: start, to: stream) }
    }

    /// `DELETE /v1/responses/{id}`: a finished response only (cancel a running one first).
    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let (record, _) = try await archive.current(id, request)
        if !record.response.isFinished {
            throw OpenAIError(
                status: 409, message: "response \(id) is still \(record.response.status); cancel it first",
                type: "invalid_request_error", param: "response_id", code: .responseInProgress)
        }
        do {
            try await archive.store.delete(id)
        } catch {
            throw OpenAIError(HTTPError(error))
        }
        archive.caches.drop(ResponseArchive.cacheOwner(id))
        return .json(DeletedResponse(id: id))
    }

    /// `GET /v1/responses/{id}/input_items`: the response's input items, paged as OpenAI's lists
    /// (`after`, `limit`, `order`, newest first unless `order=asc`).
    func inputItems(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let query = try ItemListQuery(request.query)
        if let include = request.query["include"], !include.isEmpty {
            throw OpenAIError.unsupported("include is not supported: no extra output is available", param: "include")
        }
        let (record, _) = try await archive.current(id, request)
        return .json(try query.page(of: record.input))
    }

    /// `POST /v1/responses/{id}/cancel`: stops a background response and answers once it has
    /// stopped (its stored status `cancelled`, its text the last snapshot). Idempotent: a finished
    /// one is returned unchanged. A foreground response belongs to its connection: 400.
    func cancel(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let (record, _) = try await archive.current(id, request)
        guard record.response.background else {
            throw OpenAIError.invalid(
                "only background responses can be cancelled; a foreground response stops when its client disconnects",
                param: "response_id", code: .notBackground)
        }
        if let task = archive.live.task(id) {
            task.cancel()
            await task.value
        } else if !record.response.isFinished, archive.store.isShared {
            // It runs on another replica: ask it through the store (it polls the flag), then
            // answer once it has stopped there, as a local cancel does.
            do {
                _ = try await archive.store.requestCancel(id)
            } catch {
                throw OpenAIError(HTTPError(error))
            }
            let final = try await archive.awaitStoredEnd(id, request, timeout: Self.remoteCancelTimeout)
            guard final.response.isFinished else {
                throw OpenAIError(
                    status: 504,
                    message:
                        "response \(id) runs on another replica, which has not confirmed the cancel yet; the request stands, retry to see its state",
                    type: "server_error", param: "response_id", code: .cancelPending)
            }
            return .json(final.response)
        }
        return .json(try await archive.current(id, request).0.response)
    }
}

/// The answer to `DELETE /v1/responses/{id}`.
struct DeletedResponse: Encodable, Sendable {
    var id: String
    var object = "response"
    var deleted = true
}
