/// Why an upstream refused a request, in the terms a caller acts on. A remote backend maps its
/// protocol's answer (an HTTP 4xx) to one of these; the server maps it back to its own wire
/// format. No layer below the server's routes carries an HTTP status.
public enum UpstreamRejection: String, Sendable, CaseIterable {
    /// The request is not one the upstream takes (its 400, and any 4xx without a case of its own).
    case invalidRequest = "invalid_request"
    /// Well formed but not processable there (its 422: a schema it cannot compile, say).
    case unprocessable
    /// Something the request names does not exist there (its 404: an unknown model).
    case notFound = "not_found"
    /// The request is too large for it (its 413).
    case tooLarge = "too_large"
    /// It refused this server's own credentials (its 401, 403, 407): the operator's fault, not the
    /// caller's.
    case credentials
}
