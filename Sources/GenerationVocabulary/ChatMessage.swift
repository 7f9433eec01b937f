/// One message of a conversation, as the chat template renders it.
public struct ChatMessage: Sendable, Codable, Equatable {
    public enum Role: String, Sendable, Codable, Equatable, CaseIterable {
        case system
        case user
        case assistant
    }

    public var role: Role
    public var content: String

    public init(role: Role, content: String) {
        self.role = role
        self.content = content
    }
}
