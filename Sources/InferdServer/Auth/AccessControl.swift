import Foundation
import HTTPServer
import Telemetry

/// API-key authentication and ownership. `authenticate` is a router middleware, so it covers every
/// route (and unmatched paths) without the HTTP layer knowing about keys; `/health` is always
/// open. The routes ask `owner(of:)` what to record on what a request creates and
/// `mayAccess(ownedBy:_:)` whether a request may see it.
struct AccessControl: Sendable {
    /// Request-scoped values the middleware sets on `RequestContext`.
    enum ContextKey {
        static let keyID = "api_key_id"
        static let owner = "api_key_owner"
    }

    /// The API keys (disabled when none are configured) and `/metrics`' own key, if any.
    let keyring: APIKeyring
    let metricsKeyring: APIKeyring?
    let metricsAuth: MetricsAuth
    let logger: Logger
    let metrics: Metrics

    init(configuration: ServerConfiguration, logger: Logger, metrics: Metrics) {
        do {
            (keyring, metricsKeyring) = try configuration.keyrings()
        } catch {
            // `serve` checks the keys before it gets here; if they still cannot be read, fail closed.
            logger.error("API keys unreadable: refusing every authenticated request", ["error": "\(error)"])
            (keyring, metricsKeyring) = (.refuseAll, .refuseAll)
        }
        metricsAuth = configuration.metricsAuth
        self.logger = logger
        self.metrics = metrics
    }

    /// What the keys say of a request's route and `Authorization` header.
    enum Verdict {
        /// No key is needed here (`/health`, keys off, `/metrics` open).
        case open
        case identified(APIKeyIdentity)
        case refused(HTTPResponse)
    }

    /// The middleware: sets the caller's identity on the request for the routes, or refuses.
    /// With the head gate wired (`admit`), a refusal has already been answered before the body.
    func authenticate(_ request: HTTPRequest, next: Handler) async throws -> HTTPResponse {
        switch check(
            route: request.route, headers: request.headers, id: request.id, path: request.path,
            remote: request.remoteAddress)
        {
        case .open: break
        case .refused(let response): return response
        case .identified(let identity):
            request.context.set(ContextKey.keyID, identity.id, logged: true)
            request.context.set(ContextKey.owner, identity.owner)
        }
        return try await next(request)
    }

    /// The head gate: refuses a missing or wrong key as soon as the headers are in, before any
    /// body byte is read. A valid key trusts the connection; so does any head when keys are off.
    func admit(_ head: RequestHead) -> HeadDecision {
        switch check(
            route: head.route, headers: head.headers, id: head.id, path: head.path, remote: head.remoteAddress)
        {
        case .open: return .pass(trusted: !keyring.isEnabled)
        case .identified: return .pass(trusted: true)
        case .refused(let response): return .refuse(response)
        }
    }

    func check(route: String, headers: HTTPHeaders, id: String, path: String, remote: String) -> Verdict {
        guard let ring = keyring(for: route), ring.isEnabled else { return .open }
        let request = (id: id, path: path, remote: remote, route: route)
        guard let header = headers["Authorization"] else {
            // Anthropic's clients send the key as `x-api-key`; it is the same key.
            if let key = headers["x-api-key"]?.trimmingCharacters(in: .whitespaces) {
                guard let identity = ring.identify(key) else {
                    return .refused(
                        refuse(request, "the API key is not valid", code: .invalidAPIKey, keyID: APIKeyring.keyID(key)))
                }
                return .identified(identity)
            }
            return .refused(
                refuse(request, "an API key is required: send Authorization: Bearer KEY", code: .missingAPIKey))
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .refused(refuse(request, "the Authorization header must be Bearer KEY", code: .invalidAuthorization))
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard let identity = ring.identify(token) else {
            return .refused(
                refuse(request, "the API key is not valid", code: .invalidAPIKey, keyID: APIKeyring.keyID(token)))
        }
        return .identified(identity)
    }

    /// The keys guarding a route: none for `/health` and the chat page's files; for `/metrics` its own key, nothing when
    /// `metrics_auth` is `open`, else the API keys.
    func keyring(for route: String) -> APIKeyring? {
        switch route {
        case "/health": return nil
        // The chat page itself: it asks for a key and sends it on every API call it makes.
        case _ where ChatPageRoutes.openRoutes.contains(route): return nil
        case "/metrics":
            if let metricsKeyring { return metricsKeyring }
            return metricsAuth == .open ? nil : keyring
        default: return keyring
        }
    }

    private func refuse(
        _ request: (id: String, path: String, remote: String, route: String), _ message: String, code: ErrorCode,
        keyID: String? = nil
    ) -> HTTPResponse {
        metrics.counter(
            "inferd_auth_refusals_total", help: "Requests refused for a missing or wrong API key.",
            labels: ["code": code.rawValue]
        ).increment()
        logger.warning(
            "request refused",
            [
                "request_id": request.id, "path": request.path, "code": code.rawValue, "presented_key_id": keyID ?? "",
                "remote": request.remote,
            ])
        let error = HTTPError(status: 401, message: message, type: "authentication_error", code: code)
        // The Messages routes answer in Anthropic's shape, refusals included.
        var response = MessagesRoutes.paths.contains(request.route) ? AnthropicError(error).response : .error(error)
        response.headers.append(("WWW-Authenticate", "Bearer realm=\"inferd\""))
        return response
    }

    // MARK: ownership

    /// The owner to record on something this request creates (a session): the full SHA-256 of
    /// its key in hex, or nil when authentication is off.
    func owner(of request: HTTPRequest) -> String? { request.context.value(ContextKey.owner) }

    /// Whether `request` may see something recorded with `owner`. With authentication off,
    /// everything is visible. With it on, only what the same key created: things created while
    /// it was off (owner nil) are visible to no key. Callers answer exactly as for an unknown id
    /// (404) when this is false, so another key cannot learn that the id exists.
    func mayAccess(ownedBy owner: String?, _ request: HTTPRequest) -> Bool {
        guard keyring.isEnabled else { return true }
        guard let owner, let mine = self.owner(of: request) else { return false }
        return owner == mine
    }
}
