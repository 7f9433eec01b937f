import Foundation
import HTTPServer
import Sessions

/// A session's `metadata`: up to 16 string pairs a client keeps with it (the chat page keeps its
/// title and settings there), under the rules of OpenAI's `metadata` (keys up to 64 characters,
/// values up to 512). It is the same record as the session's conversation's metadata
/// (`conv_x` is `sess_x`): kept in the response store beside stored responses, so it lives where
/// the sessions do (SQLite, or the shared PostgreSQL database) and both APIs see one value.
struct SessionMetadata: Sendable {
    let store: any ResponseStoring

    /// The session's metadata; `[:]` when it has none or the store cannot be read (a list of
    /// sessions is still worth showing without titles).
    func read(_ sessionID: String) async -> [String: String] {
        guard let payload = try? await store.conversationMetadata(ConversationObject.id(ofSession: sessionID)),
            let pairs = try? JSONDecoder().decode([String: String].self, from: Data(payload.utf8))
        else { return [:] }
        return pairs
    }

    /// Replaces the session's metadata (empty: removes it).
    func save(_ pairs: [String: String], for sessionID: String) async throws {
        let id = ConversationObject.id(ofSession: sessionID)
        do {
            if pairs.isEmpty {
                try await store.deleteConversationMetadata(id)
            } else {
                try await store.saveConversationMetadata(id, WireJSON.string(pairs))
            }
        } catch {
            throw HTTPError(status: 500, message: "\(error)", type: "server_error", code: .storageError)
        }
    }

    func delete(_ sessionID: String) async {
        try? await store.deleteConversationMetadata(ConversationObject.id(ofSession: sessionID))
    }
}

extension NativeFields {
    /// `metadata` (see `SessionMetadata`); nil when absent.
    func metadata() throws(HTTPError) -> [String: String]? {
        guard fields["metadata"] != nil else { return nil }
        do {
            return try ResponsesRequest.metadata(fields)
        } catch {
            throw .badRequest(error.message, code: .invalidValue, param: error.param)
        }
    }
}
