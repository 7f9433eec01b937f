import HTTPServer

/// An error in Anthropic's shape: `{"type":"error","error":{"type","message"}}`. The Messages
/// routes answer every failure with it. Anthropic's errors carry no field name of their own, so a
/// refusal about one field starts its message with the field's path (`messages.0.content.1.type:
/// …`), as Anthropic's own validation messages do.
struct AnthropicError: Error, Sendable, Equatable {
    var status: Int
    var type: String
    var message: String
    /// The field the error is about (`messages.0.content`), when there is one.
    var field: String?
    /// Sent as `retry-after` (seconds) with 529 and 429.
    var retryAfterSeconds: Int?

    init(status: Int, type: String, message: String, field: String? = nil, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.type = type
        self.message = message
        self.field = field
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The shared paths' errors (validation, admission, generation) in Anthropic's types:
    /// a full engine queue is 529 `overloaded_error`, as Anthropic answers when it has no capacity.
    init(_ e: OpenAIError) {
        self.init(
            status: e.status, type: "", message: e.message, field: e.param, retryAfterSeconds: e.retryAfterSeconds)
        switch (e.status, e.code) {
        case (503, .serverBusy?):
            status = 529
            type = "overloaded_error"
        case (400, _), (422, _): type = "invalid_request_error"
        case (401, _): type = "authentication_error"
        case (403, _): type = "permission_error"
        case (404, _): type = "not_found_error"
        case (413, _): type = "request_too_large"
        case (429, _): type = "rate_limit_error"
        case (409, _): type = "invalid_request_error"
        default: type = "api_error"
        }
    }

    init(_ e: HTTPError) { self.init(OpenAIError(e)) }

    static func invalid(_ message: String, field: String?) -> AnthropicError {
        AnthropicError(status: 400, type: "invalid_request_error", message: message, field: field)
    }

    /// The message as sent: prefixed with the field unless it already names it.
    var wireMessage: String {
        guard let field, !message.hasPrefix(field) else { return message }
        return "\(field): \(message)"
    }

    struct Envelope: Encodable {
        struct Inner: Encodable {
            var type: String
            var message: String
        }
        var type = "error"
        var error: Inner
    }

    var envelope: Envelope { Envelope(error: .init(type: type, message: wireMessage)) }

    var response: HTTPResponse {
        var response = HTTPResponse.json(envelope, status: status)
        if let seconds = retryAfterSeconds { response.headers.append(("retry-after", "\(seconds)")) }
        return response
    }
}
