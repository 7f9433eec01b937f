import Foundation
import HTTPServer
import Sessions

/// A conversation's items: its session's transcript seen as OpenAI's message items. An item's
/// id is its entry's position in the transcript (`msg_<session hex>_<position>`), stored with the
/// entry, so ids survive restarts; a deleted item leaves a `deleted` entry behind, so its
/// position (its id) is never handed out again.
///
/// Adding and deleting items edit the session: each edit is a request of the session's queue
/// (`TranscriptEdit`), run by its actor between turns, so it never lands in the middle of a
/// response. It waits for a running response as a turn would (a conversation's `on_busy` is
/// `queue`; a session made with `reject` refuses it with 409), is written in one transaction, and
/// a deletion cuts the kept KV cache back to before the deleted item.
struct ConversationItemRoutes: Sendable {
    let conversations: ConversationRoutes

    /// At most this many items per `POST …/items`, as OpenAI allows.
    static let maxItemsPerCreate = 20

    func register(_ router: Router) {
        let openAI = OpenAIRoutes.openAI
        router.get("/v1/conversations/{id}/items", openAI { request in try await list(request) })
        router.post("/v1/conversations/{id}/items", openAI { request in try await add(request) })
        router.get("/v1/conversations/{id}/items/{item_id}", openAI { request in try await get(request) })
        router.delete("/v1/conversations/{id}/items/{item_id}", openAI { request in try await delete(request) })
    }

    func session(_ request: HTTPRequest) async throws(OpenAIError) -> Session {
        try await conversations.require(request.pathParameters["id"] ?? "", request, param: "conversation_id")
    }

    /// One transcript entry as conversation items: one item, or for a response with calls its
    /// message (when it has text) and a `function_call` item per call (`fc_<session>_<position>_<i>`;
    /// deleting one deletes the response it belongs to); none for a deleted entry.
    static func items(_ e: TranscriptEntry, sessionID: String) -> [ResponseItem] {
        guard e.kind == .response, let calls = e.toolCalls, !calls.isEmpty else {
            return item(e, sessionID: sessionID).map { [$0] } ?? []
        }
        let message = e.content.isEmpty ? [] : item(e, sessionID: sessionID).map { [$0] } ?? []
        let status = e.status == .completed ? "completed" : "incomplete"
        return message
            + calls.enumerated().map { i, call in
                ResponseItem.functionCall(
                    call, id: callItemID(sessionID: sessionID, position: e.position, index: i), status: status)
            }
    }

    /// One transcript entry as a conversation item; nil for a deleted one.
    static func item(_ e: TranscriptEntry, sessionID: String) -> ResponseItem? {
        let id = itemID(sessionID: sessionID, position: e.position)
        switch e.kind {
        case .deleted:
            return nil
        case .instructions:
            return ResponseItem(
                id: id, status: "completed", role: "system", content: [.init(type: "input_text", text: e.content)])
        case .prompt:
            return ResponseItem(
                id: id, status: "completed", role: "user", content: [.init(type: "input_text", text: e.content)])
        case .response:
            let status =
                switch e.status {
                case .completed: "completed"
                case .inProgress: "in_progress"
                default: "incomplete"
                }
            return ResponseItem(id: id, status: status, role: "assistant", content: [.output(e.content)])
        case .userItem, .assistantItem, .systemItem, .developerItem:
            let role = e.kind.itemRole ?? "user"
            var item = ResponseItem.input(role: role, text: e.content)
            item.id = id
            return item
        case .toolResult:
            var item = ResponseItem.functionCallOutput(callID: e.toolCallID ?? "", output: e.content)
            item.id = id
            return item
        }
    }

    static func itemID(sessionID: String, position: Int) -> String {
        "msg_\(sessionID.dropFirst(ConversationObject.sessionPrefix.count))_\(position)"
    }

    static func callItemID(sessionID: String, position: Int, index: Int) -> String {
        "fc_\(sessionID.dropFirst(ConversationObject.sessionPrefix.count))_\(position)_\(index)"
    }

    /// The transcript position an item id of this session names (a call's item: its
    /// response's); nil for any other id.
    static func itemPosition(_ itemID: String, sessionID: String) -> Int? {
        let callPrefix = callItemID(sessionID: sessionID, position: 0, index: 0).dropLast(3)
        if itemID.hasPrefix(callPrefix) {
            let numbers = itemID.dropFirst(callPrefix.count).split(separator: "_")
            guard numbers.count == 2, let p = Int(numbers[0]), let i = Int(numbers[1]), p >= 0, i >= 0,
                itemID == callItemID(sessionID: sessionID, position: p, index: i)
            else { return nil }
            return p
        }
        let prefix = Self.itemID(sessionID: sessionID, position: 0).dropLast()
        guard itemID.hasPrefix(prefix), let p = Int(itemID.dropFirst(prefix.count)), p >= 0,
            itemID == Self.itemID(sessionID: sessionID, position: p)
        else { return nil }
        return p
    }

    /// A session's transcript as conversation items, in order.
    static func items(of session: Session) async -> [ResponseItem] {
        await session.snapshot(backend: nil).entries.flatMap { Self.items($0, sessionID: session.id) }
    }

    static func itemNotFound(_ itemID: String) -> OpenAIError {
        OpenAIError(
            status: 404, message: "No item found with id '\(itemID)'.", type: "invalid_request_error",
            param: "item_id", code: .itemNotFound)
    }

    /// `GET /v1/conversations/{id}/items`: paged as OpenAI's lists (newest first unless
    /// `order=asc`, as OpenAI's default).
    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await session(request)
        let query = try ItemListQuery(request.query)
        return .json(try query.page(of: await Self.items(of: session)))
    }

    func get(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await session(request)
        let itemID = request.pathParameters["item_id"] ?? ""
        guard let item = await Self.items(of: session).first(where: { $0.id == itemID }) else {
            throw Self.itemNotFound(itemID)
        }
        return .json(item)
    }

    /// `POST /v1/conversations/{id}/items`: `items` (1 to 20 message items, roles user,
    /// assistant, system or developer, text content) appended in order; answers the list of the
    /// items created. `include` (a query parameter) names extra output inferd does not produce:
    /// refused unless empty.
    func add(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await session(request)
        // `include` or `include[]` (how clients spell a list in a query), possibly percent-encoded.
        if let include = request.query.first(where: { ($0.key.removingPercentEncoding ?? $0.key).hasPrefix("include") }
        ),
            !include.value.isEmpty
        {
            throw OpenAIError.unsupported(
                "include: inferd's message items have no additional fields to include", param: "include")
        }
        let f = try OpenAIRoutes.fields(request)
        if let unknown = f.values.keys.sorted().first(where: { $0 != "items" }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: .unknownParameter)
        }
        guard let raw = f["items"] else {
            throw OpenAIError.invalid("items is required", param: "items", code: .missingRequiredParameter)
        }
        guard case .array(let list) = raw else { throw f.typeError("items", "a list of message items", raw) }
        guard (1...Self.maxItemsPerCreate).contains(list.count) else {
            throw OpenAIError.invalid(
                "items must hold 1 to \(Self.maxItemsPerCreate) items, got \(list.count)", param: "items")
        }
        var messages: [TranscriptEdit.Message] = []
        for (i, item) in list.enumerated() {
            let message = try ResponsesRequest.message(item, path: "items[\(i)]")
            messages.append(TranscriptEdit.Message(role: message.role, text: message.text))
        }
        do {
            for (i, m) in messages.enumerated() {
                try conversations.turns.checkItem(m.text, field: "items[\(i)].content")
            }
            try await conversations.turns.checkTranscript(
                session, adding: messages.reduce(0) { $0 + $1.text.utf8.count })
        } catch {
            throw OpenAIError(error)
        }
        let held = await session.snapshot(backend: nil).entries.filter { $0.kind == .prompt || $0.kind.itemRole != nil }
        let maxTurns = conversations.turns.maxTurns
        guard held.count + messages.count <= maxTurns else {
            throw OpenAIError(
                status: 409,
                message:
                    "conversation holds \(held.count) messages and turns; with \(messages.count) more it would pass \(maxTurns), the most this server keeps",
                type: "invalid_request_error", param: "items", code: .sessionFull)
        }
        let outcome = try await edit(.append(messages), on: session, request: request)
        let created = outcome.addedEntries.compactMap { Self.item($0, sessionID: session.id) }
        return .json(ListPage(data: created, hasMore: false, id: \.id))
    }

    /// `DELETE /v1/conversations/{id}/items/{item_id}`: answers the conversation.
    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await session(request)
        let itemID = request.pathParameters["item_id"] ?? ""
        guard let position = Self.itemPosition(itemID, sessionID: session.id) else { throw Self.itemNotFound(itemID) }
        do {
            _ = try await edit(.delete(position: position), on: session, request: request)
        } catch let e as OpenAIError where e.code == .entryNotFound {
            throw Self.itemNotFound(itemID)
        }
        return .json(await conversations.object(session))
    }

    /// Runs an edit through the session's queue; a client that leaves while it waits takes it out
    /// of the queue (nothing is applied).
    func edit(_ edit: TranscriptEdit, on session: Session, request: HTTPRequest) async throws -> TurnOutcome {
        let outcome: TurnOutcome
        do {
            outcome = try await conversations.turns.edit(edit, on: session, request: request)
        } catch let error as SessionError {
            throw Self.editError(error)
        }
        switch outcome.status {
        case .completed: return outcome
        case .cancelled:
            throw OpenAIError(
                status: 409, message: "the edit was cancelled before it was applied", type: "invalid_request_error",
                param: nil, code: .cancelled)
        case .failed:
            throw Self.editError(outcome.error ?? .storage("unknown"))
        }
    }

    static func editError(_ error: SessionError) -> OpenAIError {
        if case .entryNotFound = error {
            return OpenAIError(
                status: 404, message: "\(error)", type: "invalid_request_error", param: "item_id",
                code: .entryNotFound)
        }
        var e = OpenAIError(HTTPError(error))
        switch e.code {
        case .sessionBusy, .sessionQueueFull, .sessionNotFound: e.param = "conversation_id"
        default: break
        }
        return e
    }
}
