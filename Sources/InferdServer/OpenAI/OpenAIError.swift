import HTTPServer

/// An error in OpenAI's shape: `{"error":{"message","type","param","code"}}`. The OpenAI routes
/// answer every failure with it; `HTTPError`s from the shared paths are converted.
package struct OpenAIError: Error, Sendable, Equatable {
    var status: Int
    var message: String
    var type: String
    var param: String?
    var code: ErrorCode?
    /// Sent as the `Retry-After` header (seconds), not in the body.
    var retryAfterSeconds: Int?

    init(
        status: Int, message: String, type: String, param: String? = nil, code: ErrorCode?,
        retryAfterSeconds: Int? = nil
    ) {
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The same error from the shared validation and generation paths, with the parameter it
    /// carries (or `param`, when the caller knows better).
    init(_ e: HTTPError, param: String? = nil) {
        self.init(
            status: e.status, message: e.message, type: e.type, param: param ?? e.param, code: e.code,
            retryAfterSeconds: e.retryAfterSeconds)
    }

    static func invalid(_ message: String, param: String?, code: ErrorCode = .invalidValue) -> OpenAIError {
        OpenAIError(status: 400, message: message, type: "invalid_request_error", param: param, code: code)
    }

    static func unsupported(_ message: String, param: String?) -> OpenAIError {
        OpenAIError(
            status: 400, message: message, type: "invalid_request_error", param: param, code: .unsupportedParameter)
    }

    static func modelNotFound(_ name: String, served: String) -> OpenAIError {
        OpenAIError(
            status: 404, message: "The model '\(name)' does not exist; this server serves '\(served)'",
            type: "invalid_request_error", param: "model", code: .modelNotFound)
    }

    var response: HTTPResponse {
        var response = HTTPResponse.json(Envelope(error: self), status: status)
        if let seconds = retryAfterSeconds { response.headers.append(("Retry-After", "\(seconds)")) }
        return response
    }

    private struct Envelope: Encodable {
        let error: OpenAIError
    }
}

extension OpenAIError: Encodable {
    enum CodingKeys: String, CodingKey { case message, type, param, code }

    /// `param` and `code` are always present, null when unknown, as OpenAI sends them.
    package func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(message, forKey: .message)
        try c.encode(type, forKey: .type)
        try c.encode(param, forKey: .param)
        try c.encode(code?.rawValue, forKey: .code)
    }
}
