import Backend
import Engine
import Foundation
import HTTPServer
import Sessions
import Telemetry

/// The composition root: the routes of every API surface over one model, the shared
/// `GenerationService` under them, sessions and authentication.
/// Owns no connections or Tasks: those belong to the HTTP layer, which cancels a request's
/// Task when its client leaves, and that cancellation is all the engine ever sees of it.
public final class InferdApp: Sendable {
    public let configuration: ServerConfiguration
    public let host: ModelHost
    public let logger: Logger
    public let metrics: Metrics
    /// The API keys (disabled when none are configured) and `/metrics`' own key, if any.
    let keyring: APIKeyring
    let metricsKeyring: APIKeyring?
    /// Conversation sessions; without one given, an in-memory store (nothing survives a restart).
    public let sessions: SessionManager
    /// Validation, submission, metrics and error mapping shared by every route's generations.
    let generations: GenerationService
    /// Stored Responses-API responses (in-memory unless one is given) and the ones generating now.
    let responseStore: any ResponseStoring
    let liveResponses = ResponseRegistry()
    let startedAt = Date()
    /// This replica's name (`replica_id`, else the host name), on every response and `started` event.
    let replicaId: String

    public init(
        configuration: ServerConfiguration, host: ModelHost, logger: Logger, metrics: Metrics,
        sessions: SessionManager? = nil, responses: (any ResponseStoring)? = nil
    ) {
        self.configuration = configuration
        self.host = host
        self.logger = logger
        self.metrics = metrics
        replicaId = configuration.effectiveReplicaId
        responseStore = responses ?? ResponseStore.inMemory()
        generations = GenerationService(configuration: configuration, logger: logger, metrics: metrics)
        do {
            (keyring, metricsKeyring) = try configuration.keyrings()
        } catch {
            // `serve` checks the keys before it gets here; if they still cannot be read, fail closed.
            logger.error("API keys unreadable: refusing every authenticated request", ["error": "\(error)"])
            (keyring, metricsKeyring) = (.refuseAll, .refuseAll)
        }
        self.sessions =
            sessions
            ?? Self.makeSessions(
                configuration: configuration, store: TranscriptStore.inMemory(), logger: logger, metrics: metrics)
    }

    public func makeRouter() -> Router {
        let router = Router()
        router.use { [self] request, next in try await authenticate(request, next: next) }
        router.get("/health") { [self] request in await health(request) }
        router.get("/metrics") { [self] _ in metricsText() }
        router.post("/v1/generations") { [self] request in try await createGeneration(request) }
        addResponsesRoutes(to: router)
        registerSessionRoutes(router)
        addOpenAIRoutes(to: router)
        return router
    }

    /// The generation backend, or 503 while the model is still loading (or failed to load).
    func requireBackend() throws -> any GenerationBackend {
        switch host.current {
        case .ready(let backend): return backend
        case .loading:
            throw HTTPError.serviceUnavailable("the model is still loading; retry shortly", code: "model_loading")
        case .failed(let why):
            throw HTTPError.serviceUnavailable("the model failed to load: \(why)", code: "model_unavailable")
        }
    }
}
