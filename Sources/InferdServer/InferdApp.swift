import Backend
import Engine
import Foundation
import HTTPServer
import Sessions
import Telemetry
import Timekeeping

/// The composition root: it builds the services (authentication, the generation service, session
/// turns, the response archive) and one route type per API surface over them, and wires the
/// routes into a router. It holds no route logic of its own.
/// Owns no connections or Tasks: those belong to the HTTP layer, which cancels a request's
/// Task when its client leaves, and that cancellation is all the engine ever sees of it.
public final class InferdApp: Sendable {
    public let configuration: ServerConfiguration
    public let host: ModelHost
    public let logger: Logger
    public let metrics: Metrics
    /// Conversation sessions; without one given, an in-memory store (nothing survives a restart).
    public let sessions: SessionManager
    let access: AccessControl
    /// Limits, submission, metrics and error mapping shared by every generation.
    let generations: GenerationService
    /// Stored Responses-API responses and the ones generating now.
    let archive: ResponseArchive
    let startedAt = Date()

    public init(
        configuration: ServerConfiguration, host: ModelHost, logger: Logger, metrics: Metrics,
        sessions: SessionManager? = nil, responses: (any ResponseStoring)? = nil, clock: any TimeSource = .system
    ) {
        self.configuration = configuration
        self.host = host
        self.logger = logger
        self.metrics = metrics
        let sessions =
            sessions
            ?? StoreFactory.inMemorySessions(
                configuration: configuration, logger: logger, metrics: metrics, clock: clock)
        self.sessions = sessions
        access = AccessControl(configuration: configuration, logger: logger, metrics: metrics)
        generations = GenerationService(configuration: configuration, logger: logger, metrics: metrics, clock: clock)
        archive = ResponseArchive(
            store: responses ?? ResponseStore.inMemory(), live: ResponseRegistry(), caches: sessions.environment.caches,
            access: access, replicaId: configuration.effectiveReplicaId, maxAgeDays: configuration.responseMaxAgeDays,
            quota: configuration.tenantQuota, logger: logger, clock: clock)
    }

    public func makeRouter() -> Router {
        let router = Router()
        router.use { [access] request, next in try await access.authenticate(request, next: next) }
        // The same check on the head alone: a refused request is answered before its body is read.
        router.gate { [access] head in access.admit(head) }
        let replicaId = configuration.effectiveReplicaId
        let turns = SessionTurns(
            sessions: sessions, generations: generations, access: access, host: host,
            maxTurns: configuration.maxSessionTurns, quota: configuration.tenantQuota,
            toolCallFormat: configuration.toolCallFormat)
        let conversations = ConversationRoutes(turns: turns, archive: archive, access: access)
        OperationsRoutes(
            host: host, sessions: sessions, generations: generations, metrics: metrics, startedAt: startedAt
        ).register(router)
        GenerationRoutes(
            generations: generations, host: host, replicaId: replicaId, toolCallFormat: configuration.toolCallFormat
        ).register(router)
        ResponsesRoutes(
            generations: generations, archive: archive, conversations: conversations, access: access, host: host,
            toolCallFormat: configuration.toolCallFormat
        ).register(router)
        conversations.register(router)
        TokenizerRoutes(host: host).register(router)
        SessionRoutes(
            turns: turns, access: access, host: host, replicaId: replicaId,
            metadata: SessionMetadata(store: archive.store)
        ).register(router)
        OpenAIRoutes(
            generations: generations, turns: turns, host: host, startedAt: startedAt,
            toolCallFormat: configuration.toolCallFormat
        ).register(router)
        MessagesRoutes(
            generations: generations, turns: turns, host: host, toolCallFormat: configuration.toolCallFormat
        ).register(router)
        if configuration.ui { ChatPageRoutes().register(router) }
        return router
    }

    /// At shutdown, after the HTTP server has drained: stops the background responses still
    /// running and records each as `failed` (`server_stopped`), as a restart would find them.
    public func stopBackgroundResponses() async {
        await archive.stopBackgroundResponses()
    }
}
