/// An error a handler throws to produce a specific HTTP error response.
public struct HTTPError: Error, Sendable, Equatable {
    public var status: Int
    public var message: String
    public var type: String
    public var code: ErrorCode
    /// The request field the error is about (`options.temperature`, `limit`), when there is one:
    /// a value, so no layer above has to recover it from the message.
    public var param: String?
    /// Sent as `Retry-After` (seconds): when a client that was refused may try again.
    public var retryAfterSeconds: Int?

    public init(
        status: Int, message: String, type: String, code: ErrorCode, param: String? = nil, retryAfterSeconds: Int? = nil
    ) {
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.retryAfterSeconds = retryAfterSeconds
    }

    public static func badRequest(_ message: String, code: ErrorCode, param: String? = nil) -> HTTPError {
        HTTPError(status: 400, message: message, type: "invalid_request_error", code: code, param: param)
    }
    public static func notFound(_ message: String, code: ErrorCode = .notFound) -> HTTPError {
        HTTPError(status: 404, message: message, type: "not_found_error", code: code)
    }
    public static func methodNotAllowed(_ message: String) -> HTTPError {
        HTTPError(status: 405, message: message, type: "invalid_request_error", code: .methodNotAllowed)
    }
    public static func conflict(_ message: String, code: ErrorCode) -> HTTPError {
        HTTPError(status: 409, message: message, type: "invalid_request_error", code: code)
    }
    public static func payloadTooLarge(_ message: String) -> HTTPError {
        HTTPError(status: 413, message: message, type: "invalid_request_error", code: .payloadTooLarge)
    }
    public static func unsupportedMediaType(_ message: String) -> HTTPError {
        HTTPError(status: 415, message: message, type: "invalid_request_error", code: .unsupportedMediaType)
    }
    public static func tooManyRequests(_ message: String, code: ErrorCode) -> HTTPError {
        HTTPError(status: 429, message: message, type: "rate_limit_error", code: code)
    }
    public static func internalError(_ message: String = "internal server error") -> HTTPError {
        HTTPError(status: 500, message: message, type: "server_error", code: .internalError)
    }
    public static func serviceUnavailable(_ message: String, code: ErrorCode = .unavailable) -> HTTPError {
        HTTPError(status: 503, message: message, type: "server_error", code: code)
    }
}
