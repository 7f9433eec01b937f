import Foundation

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
        do {
            return HTTPResponse(
                status: status, headers: [("Content-Type", "application/json")], body: .bytes(try WireJSON.bytes(value))
            )
        } catch {
            return .error(.internalError("could not encode response"))
        }
    }

    public static func text(
        _ s: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(s.utf8)))
    }

    /// `{"error":{"code":…,"message":…,"param":…,"type":…}}` with the error's status; `param`
    /// only when the error is about one request field.
    public static func error(_ e: HTTPError) -> HTTPResponse {
        struct Envelope: Encodable {
            struct Inner: Encodable {
                let message: String
                let type: String
                let code: String
                let param: String?
            }
            let error: Inner
        }
        var response = json(
            Envelope(error: .init(message: e.message, type: e.type, code: e.code.rawValue, param: e.param)),
            status: e.status)
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
