public struct HTTPRequest: Sendable {
    public let id: String
    public let method: HTTPMethod
    public let path: String
    public let query: [String: String]
    public let headers: HTTPHeaders
    public let body: [UInt8]
    public let remoteAddress: String
    public var pathParameters: [String: String]
    public let context: RequestContext
    /// The route pattern that matched (`/v1/sessions/{id}`), or "unmatched".
    public var route: String
    /// Deepest nesting of arrays and objects `decodeJSON` accepts (checked before decoding).
    public var maxJSONDepth: Int

    public init(
        id: String, method: HTTPMethod, path: String, query: [String: String] = [:], headers: HTTPHeaders = .init(),
        body: [UInt8] = [], remoteAddress: String = "", pathParameters: [String: String] = [:],
        context: RequestContext = RequestContext(), route: String = "", maxJSONDepth: Int = 64
    ) {
        self.route = route
        self.maxJSONDepth = maxJSONDepth
        self.id = id
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.pathParameters = pathParameters
        self.context = context
    }
}
