/// A conversation of OpenAI's Conversations API: an inferd session seen through OpenAI's shape
/// (`conv_…` is the session `sess_…`), with its metadata.
struct ConversationObject: Codable, Sendable, Equatable {
    var id: String
    var object = "conversation"
    var createdAt: Int
    var metadata: [String: String]

    enum CodingKeys: String, CodingKey {
        case id, object, metadata
        case createdAt = "created_at"
    }

    static let prefix = "conv_"
    static let sessionPrefix = "sess_"

    /// The conversation id of a session, and back (nil for an id of another shape).
    static func id(ofSession sessionID: String) -> String {
        prefix + sessionID.dropFirst(sessionPrefix.count)
    }

    static func sessionID(of conversationID: String) -> String? {
        guard conversationID.hasPrefix(prefix), conversationID.count > prefix.count else { return nil }
        return sessionPrefix + conversationID.dropFirst(prefix.count)
    }
}

/// The answer to `DELETE /v1/conversations/{id}`.
struct DeletedConversation: Encodable, Sendable {
    var id: String
    var object = "conversation.deleted"
    var deleted = true
}
