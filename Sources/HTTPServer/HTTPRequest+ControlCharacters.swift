extension HTTPRequest {
    /// Refuses a request whose path parameters (the ids a route takes from its path), query
    /// parameters or `X-Request-Id` hold a control character: 400 `invalid_value` naming the
    /// parameter or header. Runs inside the middlewares (an unauthenticated caller learns nothing
    /// about the routes from it) and before the route's handler, so no route ever looks up an id
    /// that is not what the client sent. Ids in bodies are checked where fields are read.
    func refuseControlCharacters() throws(HTTPError) {
        for name in pathParameters.keys.sorted() {
            try Self.refuse(pathParameters[name]!, "path parameter '\(name)'", param: name)
        }
        for name in query.keys.sorted() {
            try Self.refuse(name, "a query parameter's name", param: name)
            try Self.refuse(query[name]!, "query parameter '\(name)'", param: name)
        }
        if let requestID = headers["X-Request-Id"] {
            try Self.refuse(requestID, "the X-Request-Id header", param: "X-Request-Id")
        }
    }

    private static func refuse(_ value: String, _ what: String, param: String) throws(HTTPError) {
        guard let scalar = ControlCharacters.first(in: value) else { return }
        throw .badRequest(
            "\(what) holds a control character (\(ControlCharacters.describe(scalar))); ids never do",
            code: .invalidValue, param: param)
    }
}
