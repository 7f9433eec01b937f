/// A request as it stands when its head (request line and headers) is complete and before any
/// byte of its body has been read: what a `HeadGate` decides on.
public struct RequestHead: Sendable {
    public let id: String
    public let method: HTTPMethod
    public let path: String
    /// The route pattern that matches (`/v1/sessions/{id}`), or "unmatched".
    public let route: String
    public let headers: HTTPHeaders
    public let remoteAddress: String

    public init(
        id: String, method: HTTPMethod, path: String, route: String, headers: HTTPHeaders, remoteAddress: String
    ) {
        self.id = id
        self.method = method
        self.path = path
        self.route = route
        self.headers = headers
        self.remoteAddress = remoteAddress
    }
}

/// What a `HeadGate` decides on a request's head.
public enum HeadDecision: Sendable {
    /// Read the body and serve the request. `trusted`: the connection has shown who it is (a
    /// valid API key, or any complete head when keys are off); it then no longer counts against
    /// the places half-sent connections may hold (`connection_reserve`).
    case pass(trusted: Bool)
    /// Answer now with this (e.g. 401); the body is never read and the connection closes after
    /// the answer, since the unread body is still on it.
    case refuse(HTTPResponse)
}

/// Called once per request when its head is complete, before its body is read (libmicrohttpd's
/// thread: it must not block). The HTTP layer gives the decision no meaning beyond the above.
public typealias HeadGate = @Sendable (RequestHead) -> HeadDecision
