import Foundation
import Telemetry

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

/// Request headers in arrival order; lookup is case-insensitive.
public struct HTTPHeaders: Sendable {
    public var all: [(String, String)]

    public init(_ all: [(String, String)] = []) { self.all = all }

    public subscript(name: String) -> String? {
        let lower = name.lowercased()
        return all.first { $0.0.lowercased() == lower }?.1
    }
}

/// Why the owner of a request cancelled its Task.
public enum CancellationReason: String, Sendable {
    case clientDisconnected = "client_disconnected"
    case cancelRequest = "cancel_request"
    case shutdown
    case timeout
}

/// Shared between a request's owner (its connection) and the code running in its Task.
/// The owner records the reason before it cancels the Task, so code that observes
/// cancellation can tell a disconnect from a shutdown.
///
/// It also carries request-scoped values that outer code (a router middleware) sets for the
/// handlers it wraps, e.g. who the caller is. The HTTP layer gives them no meaning; the ones set
/// with `logged: true` are added to the request's "request completed" log line.
public final class RequestContext: Sendable {
    private let reason = Locked<CancellationReason?>(nil)
    private let values = Locked<[String: (value: String, logged: Bool)]>([:])

    public init() {}

    /// A request-scoped value set by `set(_:_:logged:)`, or nil.
    public func value(_ name: String) -> String? { values.withLock { $0[name]?.value } }

    /// Sets a request-scoped value; `logged` values appear on the completion log line.
    public func set(_ name: String, _ value: String, logged: Bool = false) {
        values.withLock { $0[name] = (value, logged) }
    }

    /// The values to log, as key=value pairs.
    var loggedValues: [String: String] {
        values.withLock { $0.compactMapValues { $0.logged ? $0.value : nil } }
    }

    public var cancellationReason: CancellationReason? { reason.withLock { $0 } }

    /// Records `newReason` unless one is already set; returns true if it was recorded.
    @discardableResult
    func setCancellationReason(_ newReason: CancellationReason) -> Bool {
        reason.withLock {
            if $0 != nil { return false }
            $0 = newReason
            return true
        }
    }
}

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

    /// Decodes the body as JSON, mapping every failure to the `HTTPError` a client should see:
    /// 415 for a non-JSON Content-Type, 400 `missing_body`, 400 `invalid_json` (malformed,
    /// truncated or not UTF-8), 400 `json_too_deep` (nesting beyond `maxJSONDepth`, refused before
    /// the recursive decoder sees it), 400 `invalid_request` (valid JSON of the wrong shape).
    public func decodeJSON<T: Decodable>(_ type: T.Type) throws -> T {
        if body.isEmpty {
            throw HTTPError.badRequest("request body is required", code: "missing_body")
        }
        let contentType = headers["Content-Type"] ?? ""
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard mediaType == "application/json" else {
            throw HTTPError.unsupportedMediaType(
                "Content-Type must be application/json, got '\(contentType)'")
        }
        if let offset = Self.firstInvalidUTF8Offset(body) {
            throw HTTPError.badRequest(
                "request body is not valid UTF-8 (byte offset \(offset))", code: "invalid_json")
        }
        if Self.nestingDepth(body, stopAfter: maxJSONDepth) > maxJSONDepth {
            throw HTTPError.badRequest(
                "request body nests arrays and objects deeper than \(maxJSONDepth) levels", code: "json_too_deep")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            switch error {
            case .dataCorrupted(let context):
                var message = "request body is not valid JSON"
                if let underlying = context.underlyingError {
                    let detail = (underlying as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
                    message += ": " + (detail ?? "\(underlying)")
                } else if !context.debugDescription.isEmpty {
                    message += ": " + context.debugDescription
                }
                throw HTTPError.badRequest(message, code: "invalid_json")
            case .keyNotFound(let key, let context):
                throw HTTPError.badRequest(
                    "missing field '\(Self.path(context.codingPath + [key]))'", code: "invalid_request")
            case .typeMismatch(_, let context), .valueNotFound(_, let context):
                throw HTTPError.badRequest(
                    "invalid value at '\(Self.path(context.codingPath))': \(context.debugDescription)",
                    code: "invalid_request")
            @unknown default:
                throw HTTPError.badRequest("invalid request body", code: "invalid_request")
            }
        } catch {
            throw HTTPError.badRequest("request body is not valid JSON", code: "invalid_json")
        }
    }

    static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    /// The deepest nesting of `[` and `{` outside strings, counting no further than one past
    /// `stopAfter`. A linear scan with no recursion: it only has to be right for valid JSON, and
    /// for anything else it just has to end (the decoder then reports the syntax error).
    package static func nestingDepth(_ bytes: [UInt8], stopAfter limit: Int) -> Int {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for b in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if b == UInt8(ascii: "\\") {
                    escaped = true
                } else if b == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > deepest {
                    deepest = depth
                    if deepest > limit { return deepest }
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth = max(0, depth - 1)
            default: break
            }
        }
        return deepest
    }

    package static func firstInvalidUTF8Offset(_ bytes: [UInt8]) -> Int? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        var consumed = 0
        // Track offset by re-encoding scalar lengths: cheap and exact for valid prefixes.
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                consumed += UTF8.width(scalar)
                offset = consumed
            case .emptyInput:
                return nil
            case .error:
                return offset
            }
        }
    }
}

/// An error a handler throws to produce a specific HTTP error response.
public struct HTTPError: Error, Sendable, Equatable {
    public var status: Int
    public var message: String
    public var type: String
    public var code: String
    /// Sent as `Retry-After` (seconds): when a client that was refused may try again.
    public var retryAfterSeconds: Int?

    public init(status: Int, message: String, type: String, code: String, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.retryAfterSeconds = retryAfterSeconds
    }

    public static func badRequest(_ message: String, code: String = "bad_request") -> HTTPError {
        HTTPError(status: 400, message: message, type: "invalid_request_error", code: code)
    }
    public static func notFound(_ message: String, code: String = "not_found") -> HTTPError {
        HTTPError(status: 404, message: message, type: "not_found_error", code: code)
    }
    public static func methodNotAllowed(_ message: String) -> HTTPError {
        HTTPError(status: 405, message: message, type: "invalid_request_error", code: "method_not_allowed")
    }
    public static func conflict(_ message: String, code: String = "conflict") -> HTTPError {
        HTTPError(status: 409, message: message, type: "invalid_request_error", code: code)
    }
    public static func payloadTooLarge(_ message: String) -> HTTPError {
        HTTPError(status: 413, message: message, type: "invalid_request_error", code: "payload_too_large")
    }
    public static func unsupportedMediaType(_ message: String) -> HTTPError {
        HTTPError(status: 415, message: message, type: "invalid_request_error", code: "unsupported_media_type")
    }
    public static func tooManyRequests(_ message: String, code: String = "rate_limited") -> HTTPError {
        HTTPError(status: 429, message: message, type: "rate_limit_error", code: code)
    }
    public static func internalError(_ message: String = "internal server error") -> HTTPError {
        HTTPError(status: 500, message: message, type: "server_error", code: "internal_error")
    }
    public static func serviceUnavailable(_ message: String, code: String = "unavailable") -> HTTPError {
        HTTPError(status: 503, message: message, type: "server_error", code: code)
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    public enum Body: Sendable {
        case bytes([UInt8])
        case eventStream(@Sendable (EventStream) async -> Void)
    }

    public init(status: Int, headers: [(String, String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json<T: Encodable>(_ value: T, status: Int = 200) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try encoder.encode(value)
            return HTTPResponse(
                status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array(data)))
        } catch {
            return .error(.internalError("could not encode response"))
        }
    }

    public static func text(
        _ s: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(s.utf8)))
    }

    /// `{"error":{"message":…,"type":…,"code":…}}` with the error's status.
    public static func error(_ e: HTTPError) -> HTTPResponse {
        struct Envelope: Encodable {
            struct Inner: Encodable {
                let message: String
                let type: String
                let code: String
            }
            let error: Inner
        }
        var response = json(Envelope(error: .init(message: e.message, type: e.type, code: e.code)), status: e.status)
        if let seconds = e.retryAfterSeconds { response.headers.append(("Retry-After", "\(seconds)")) }
        return response
    }

    /// A Server-Sent Events response; `producer` runs inside the request's Task and the
    /// stream ends when it returns.
    public static func eventStream(
        status: Int = 200, _ producer: @escaping @Sendable (EventStream) async -> Void
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: [], body: .eventStream(producer))
    }
}
