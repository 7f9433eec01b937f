import Backend
import Engine
import Foundation
import HTTPServer
import Sessions

/// OpenAI's Conversations API over inferd's sessions: a conversation is a session (`conv_x` is
/// `sess_x`), its items are the session's transcript, and a response with `conversation` is a
/// turn of that session (`ConversationRoutes+Respond.swift`), so its actor serializes them with
/// the session's `on_busy` policy (queued by default; 409 with `reject`), its KV cache is kept
/// between them, and its durable transcript survives restarts. Items may also be added or deleted
/// by hand (`ConversationItemRoutes`): those edits go through the session's queue as well.
struct ConversationRoutes: Sendable {
    let turns: SessionTurns
    let archive: ResponseArchive
    let access: AccessControl

    var sessions: SessionManager { turns.sessions }

    func register(_ router: Router) {
        let openAI = OpenAIRoutes.openAI
        router.post("/v1/conversations", openAI { request in try await create(request) })
        router.get("/v1/conversations/{id}", openAI { request in try await get(request) })
        router.post("/v1/conversations/{id}", openAI { request in try await update(request) })
        router.delete("/v1/conversations/{id}", openAI { request in try await delete(request) })
        ConversationItemRoutes(conversations: self).register(router)
    }

    /// The conversation's session as `request` may see it, from the store when it is shared (a
    /// conversation created through another replica is found here too); else 404 naming `param`.
    func require(_ id: String, _ request: HTTPRequest, param: String) async throws(OpenAIError) -> Session {
        var found: Session?
        if let sid = ConversationObject.sessionID(of: id) {
            do {
                found = try await sessions.find(sid)
            } catch {
                throw OpenAIError(HTTPError(error))
            }
        }
        guard let session = found, access.mayAccess(ownedBy: session.owner, request) else {
            throw OpenAIError(
                status: 404, message: "No conversation found with id '\(id)'.", type: "invalid_request_error",
                param: param, code: .conversationNotFound)
        }
        return session
    }

    func object(_ session: Session) async -> ConversationObject {
        ConversationObject(
            id: ConversationObject.id(ofSession: session.id), createdAt: session.created,
            metadata: await SessionMetadata(store: archive.store).read(session.id))
    }

    /// `POST /v1/conversations`: `metadata`, and `items` that may only be system or developer
    /// messages (they become the session's instructions).
    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let f = request.body.isEmpty ? OpenAIFields([:]) : try OpenAIRoutes.fields(request)
        if let unknown = f.values.keys.sorted().first(where: { !["metadata", "items"].contains($0) }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: .unknownParameter)
        }
        let metadata = try ResponsesRequest.metadata(f)
        var instructions: [String] = []
        if let raw = f["items"] {
            guard case .array(let items) = raw else { throw f.typeError("items", "a list of message items", raw) }
            for (i, item) in items.enumerated() {
                let message = try ResponsesRequest.message(item, path: "items[\(i)]")
                guard message.role == "system" || message.role == "developer" else {
                    throw OpenAIError.unsupported(
                        "items[\(i)]: a conversation starts with system or developer items only; user and assistant items come from its responses",
                        param: "items[\(i)].role")
                }
                do {
                    try turns.checkItem(message.text, field: "items[\(i)].content")
                } catch {
                    throw OpenAIError(error)
                }
                instructions.append(message.text)
            }
        }
        let joined = instructions.isEmpty ? nil : instructions.joined(separator: "\n\n")
        let owner = access.owner(of: request)
        do {
            // The items become the session's instructions, which every response carries.
            try turns.checkDefaults(
                instructions: joined, maxTokens: nil, names: .openAI(maxTokens: "max_output_tokens", prompt: "items"))
            try await turns.admitSession(owner: owner)
        } catch {
            throw OpenAIError(error)
        }
        let session: Session
        do {
            session = try await sessions.create(
                instructions: joined, onBusy: .queue,
                options: nil, owner: owner)
            if !metadata.isEmpty {
                try await archive.store.saveConversationMetadata(
                    ConversationObject.id(ofSession: session.id), WireJSON.string(metadata))
            }
        } catch {
            throw OpenAIError(status: 500, message: "\(error)", type: "server_error", code: .storageError)
        }
        return .json(await object(session))
    }

    func get(_ request: HTTPRequest) async throws -> HTTPResponse {
        let session = try await require(request.pathParameters["id"] ?? "", request, param: "conversation_id")
        return .json(await object(session))
    }

    /// `POST /v1/conversations/{id}`: replaces its `metadata`.
    func update(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let session = try await require(id, request, param: "conversation_id")
        let f = try OpenAIRoutes.fields(request)
        if let unknown = f.values.keys.sorted().first(where: { $0 != "metadata" }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: .unknownParameter)
        }
        guard f["metadata"] != nil else {
            throw OpenAIError.invalid("metadata is required", param: "metadata", code: .missingRequiredParameter)
        }
        do {
            try await archive.store.saveConversationMetadata(id, WireJSON.string(try ResponsesRequest.metadata(f)))
        } catch let e as OpenAIError {
            throw e
        } catch {
            throw OpenAIError(status: 500, message: "\(error)", type: "server_error", code: .storageError)
        }
        return .json(await object(session))
    }

    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.pathParameters["id"] ?? ""
        let session = try await require(id, request, param: "conversation_id")
        do {
            _ = try await sessions.delete(session.id)
            try await archive.store.deleteConversationMetadata(id)
        } catch {
            throw OpenAIError(status: 500, message: "\(error)", type: "server_error", code: .storageError)
        }
        return .json(DeletedConversation(id: id))
    }
}
