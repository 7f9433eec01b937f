public enum HTTPMethod: Sendable, Equatable, Hashable, CustomStringConvertible {
    case get, post, put, delete, patch, head, options
    case other(String)

    public init(_ raw: String) {
        switch raw {
        case "GET": self = .get
        case "POST": self = .post
        case "PUT": self = .put
        case "DELETE": self = .delete
        case "PATCH": self = .patch
        case "HEAD": self = .head
        case "OPTIONS": self = .options
        default: self = .other(raw)
        }
    }

    public var description: String {
        switch self {
        case .get: "GET"
        case .post: "POST"
        case .put: "PUT"
        case .delete: "DELETE"
        case .patch: "PATCH"
        case .head: "HEAD"
        case .options: "OPTIONS"
        case .other(let s): s
        }
    }
}
