import Backend
import Engine
import Foundation
import HTTPServer
import RemoteBackend
import Sessions
import Telemetry
import Timekeeping

/// `inferd serve`: listen first, load the model in the background, serve until SIGINT/SIGTERM,
/// then drain and exit 0.
enum ServeCommand {
    static func run(arguments: [String]) async -> Int32 {
        let config: ServerConfiguration
        do {
            config = try ServerConfiguration.load(
                arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("inferd: \(error)\n".utf8))
            return 2
        }
        let logger = makeLogger(config)
        if !MallocTuning.returnLargeBlocksToTheSystem() {
            logger.warning("malloc threshold not set: freed KV caches may stay resident")
        }
        let httpConfiguration: HTTPServer.Configuration
        do {
            let (keys, metricsKey) = try config.keyrings()
            try config.checkQuotas()
            httpConfiguration = try HTTPServer.Configuration(config)
            logger.info(
                "authentication",
                [
                    "api_keys": "\(keys.entries.count)", "key_ids": keys.entries.map(\.id).joined(separator: ","),
                    "metrics": metricsKey != nil ? "own_key" : (keys.isEnabled ? config.metricsAuth.rawValue : "open"),
                ])
            if !keys.isEnabled && !config.listensOnLoopbackOnly {
                logger.warning(
                    "authentication off on a non-loopback address",
                    ["host": config.host, "port": "\(config.port)", "hint": "set api_keys to require a key"])
            }
        } catch {
            FileHandle.standardError.write(Data("inferd: \(error)\n".utf8))
            return 2
        }
        var upstream: UpstreamSettings?
        if config.upstream.backend == .openai {
            do {
                upstream = try config.upstreamSettings()
            } catch {
                FileHandle.standardError.write(Data("inferd: \(error)\n".utf8))
                return 2
            }
        }
        guard upstream != nil || FileManager.default.isReadableFile(atPath: config.model) else {
            logger.error("model file not found", ["path": config.model, "hint": "run make serve or pass --model PATH"])
            return 1
        }
        let metrics = Metrics()
        // The one source of time every timing decision reads (tests build the app with a manual one).
        let clock: any TimeSource = .system
        let sessions: SessionManager
        do {
            sessions = try StoreFactory.openSessions(
                configuration: config, logger: logger, metrics: metrics, clock: clock)
        } catch {
            // Never start over a database we cannot read or write: that would lose transcripts.
            logger.error(
                "session store unusable", ["store": StoreFactory.storeName(config), "error": "\(error)"])
            return 1
        }
        let responses: any ResponseStoring
        do {
            responses = try StoreFactory.openResponseStore(config)
            logger.info(
                "responses restored",
                [
                    "count": "\(responses.count)", "interrupted": "\(responses.interruptedOnOpen.count)",
                    "store": StoreFactory.storeName(config),
                ])
        } catch {
            logger.error("response store unusable", ["store": StoreFactory.storeName(config), "error": "\(error)"])
            return 1
        }
        let chatTemplate: String?
        do {
            chatTemplate = try config.chatTemplateOverride()
        } catch {
            logger.error("chat template unusable", ["chat_template": config.chatTemplate, "error": "\(error)"])
            return 1
        }
        let host = ModelHost(
            singleFlight: config.singleFlight, perKeyMaxGenerations: config.effectivePerKeyMaxGenerations, clock: clock)
        let app = InferdApp(
            configuration: config, host: host, logger: logger, metrics: metrics, sessions: sessions,
            responses: responses, clock: clock)
        let server = HTTPServer(
            configuration: httpConfiguration, router: app.makeRouter(), logger: logger,
            metrics: metrics, clock: clock)
        do {
            try server.start()
        } catch {
            logger.error("server start failed", ["host": config.host, "port": "\(config.port)", "error": "\(error)"])
            return 1
        }
        logger.info(
            "server listening", ["host": config.host, "port": "\(server.boundPort)", "pid": "\(getpid())"])
        let trigger = ShutdownTrigger()
        trigger.installSignalHandlers()
        if let upstream {
            host.connect(upstream: upstream, metrics: metrics, logger: logger) { trigger.fire(.modelLoadFailed) }
        } else {
            host.load(
                path: config.model, threads: config.threads, admission: config.admissionPolicy, metrics: metrics,
                contextLimit: config.contextLength > 0 ? config.contextLength : nil,
                chatTemplate: chatTemplate, kvCacheType: config.kvCacheType, prefixCacheMiB: config.prefixCacheMiB,
                speculativeLookup: config.speculativeLookup,
                draftModel: config.draftModel.isEmpty ? nil : config.draftModel, draftTokens: config.draftTokens,
                logger: logger, clock: clock
            ) { trigger.fire(.modelLoadFailed) }
        }

        let reason = await trigger.wait()
        switch reason {
        case .signal(let sig):
            logger.info(
                "shutdown started",
                ["signal": sig == SIGTERM ? "SIGTERM" : "SIGINT", "drain_seconds": "\(config.drainSeconds)"])
        case .modelLoadFailed:
            logger.error("shutdown started", ["reason": "model_load_failed"])
        }
        await server.shutdown()
        await app.stopBackgroundResponses()
        host.backend?.shutdown()
        logger.info("shutdown complete")
        return reason == .modelLoadFailed ? 1 : 0
    }

    static func makeLogger(_ config: ServerConfiguration) -> Logger {
        Logger(label: "inferd", minimumLevel: config.logLevel, format: config.logFormat)
    }
}

extension HTTPServer.Configuration {
    /// The HTTP layer's settings; reads the TLS certificate and key files when they are set.
    package init(_ c: ServerConfiguration) throws(ConfigurationError) {
        self.init(
            host: c.host, port: c.port, maxBodyBytes: c.maxBodyBytes, connectionLimit: c.connectionLimit,
            perIPConnectionLimit: c.perIPConnectionLimit, connectionTimeoutSeconds: c.connectionTimeoutSeconds,
            headerMemoryLimitBytes: c.headerMemoryLimitBytes, heartbeatSeconds: c.heartbeatSeconds,
            drainSeconds: c.drainSeconds, maxJSONDepth: c.maxJSONDepth)
        guard c.connectionReserve < c.connectionLimit else {
            throw ConfigurationError(
                "connection_reserve is \(c.connectionReserve), must be below connection_limit (\(c.connectionLimit))")
        }
        connectionReserve = c.connectionReserve
        headerTimeoutSeconds = c.headerTimeoutSeconds
        bodyTimeoutSeconds = c.bodyTimeoutSeconds
        responseHeaders = [("X-Inferd-Replica", c.effectiveReplicaId)]
        switch (c.tlsCert.isEmpty, c.tlsKey.isEmpty) {
        case (true, true): break
        case (false, true): throw ConfigurationError("tls_cert is set but tls_key is not: HTTPS needs both")
        case (true, false): throw ConfigurationError("tls_key is set but tls_cert is not: HTTPS needs both")
        case (false, false):
            tlsCertificatePEM = try Self.readPEM(c.tlsCert, setting: "tls_cert", marker: "CERTIFICATE")
            tlsKeyPEM = try Self.readPEM(c.tlsKey, setting: "tls_key", marker: "PRIVATE KEY")
        }
    }

    private static func readPEM(_ path: String, setting: String, marker: String) throws(ConfigurationError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("\(setting): cannot read \(path)")
        }
        let text = String(decoding: data, as: UTF8.self)
        guard text.contains("-----BEGIN "), text.contains("\(marker)-----") else {
            throw ConfigurationError("\(setting): \(path) is not a PEM file holding a \(marker.lowercased())")
        }
        return text
    }
}
