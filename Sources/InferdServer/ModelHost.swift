import Backend
import Engine
import Foundation
import HTTPServer
import RemoteBackend
import Synchronization
import Telemetry
import Timekeeping

/// Holds the served model through its life: loading (the server already listens), ready, or
/// failed. Loading runs on a thread of its own so the HTTP side answers `/health` meanwhile.
///
/// With single-flight on, the ready backend is wrapped once in a `SingleFlightBackend`, and
/// stateless generations get the wrapper (`backend`, `requireBackend`); a session's turns get the
/// backend itself (`requireSessionBackend`), since a turn holding its KV sequence never shares.
/// With a per-key limit (`per_key_max_generations`), both go through one `TenantShareBackend`'s
/// counts first: under single-flight for stateless generations, directly for a session's turns.
public final class ModelHost: Sendable {
    public enum State: Sendable {
        case loading
        case ready(any GenerationBackend)
        case failed(String)
    }

    /// The state as set, and the backend stateless generations use (the ready one, wrapped when
    /// single-flight is on).
    private let state = Locked<(State, shared: (any GenerationBackend)?, session: (any GenerationBackend)?)>(
        (.loading, nil, nil))
    private let singleFlight: Bool
    private let perKeyMaxGenerations: Int
    private let clock: any TimeSource

    /// `singleFlight` wraps the ready backend in a `SingleFlightBackend` for stateless generations.
    /// `perKeyMaxGenerations` above 0 limits the generations one API key's owner holds at once,
    /// running or waiting (`TenantShareBackend`; `clock` times them for `Retry-After`).
    public init(singleFlight: Bool = true, perKeyMaxGenerations: Int = 0, clock: any TimeSource = .system) {
        self.singleFlight = singleFlight
        self.perKeyMaxGenerations = perKeyMaxGenerations
        self.clock = clock
    }

    public var current: State { state.withLock { $0.0 } }

    /// The backend stateless generations use once the model is ready (with single-flight on,
    /// the wrapper sharing identical ones).
    public var backend: (any GenerationBackend)? {
        state.withLock { $0.shared }
    }

    /// The backend for stateless generations, or 503 while the model is still loading (or failed
    /// to load).
    func requireBackend() throws(HTTPError) -> any GenerationBackend {
        let (current, shared, _) = state.withLock { $0 }
        switch current {
        case .ready(let backend): return shared ?? backend
        case .loading:
            throw .serviceUnavailable("the model is still loading; retry shortly", code: .modelLoading)
        case .failed(let why):
            throw .serviceUnavailable("the model failed to load: \(why)", code: .modelUnavailable)
        }
    }

    /// The backend itself, never the single-flight wrapper (a session's turns go there; with a
    /// per-key limit, through the same `TenantShareBackend` counts), or 503 while the model is
    /// still loading (or failed to load).
    func requireSessionBackend() throws(HTTPError) -> any GenerationBackend {
        let backend = try requireBackend()
        return state.withLock { $0.session } ?? backend
    }

    /// Throws `tenantBusy` when `tenant` already holds its share of generations (a session's turn
    /// asks before its stream starts; it is submitted later, when its session's queue reaches it).
    func checkShare(of tenant: String) throws(GenerationError) {
        try (state.withLock { $0.session } as? TenantShareBackend)?.checkShare(of: tenant)
    }

    /// Starts loading `path` in the background and returns at once. `admission` bounds the
    /// engine's running and waiting generations; `metrics` receives the engine's series;
    /// `contextLimit` caps the model's context (nil: its own).
    public func load(
        path: String, threads: Int, admission: AdmissionPolicy = AdmissionPolicy(), metrics: Metrics = Metrics(),
        contextLimit: Int? = nil, chatTemplate: String? = nil, kvCacheType: KVCacheType = .f16,
        prefixCacheMiB: Int = InferenceEngine.defaultPrefixCacheMiB,
        speculativeLookup: Int = InferenceEngine.defaultSpeculativeLookup, draftModel: String? = nil,
        draftTokens: Int = InferenceEngine.defaultDraftTokens, logger: Logger,
        clock: any TimeSource = .system,
        onFailure: @escaping @Sendable () -> Void = {}
    ) {
        let thread = Thread { [self] in
            let start = ContinuousClock.now
            logger.info("model loading", ["path": path, "threads": "\(threads)"])
            do {
                let engine = try InferenceEngine(
                    path: path, threads: threads, admission: admission, metrics: metrics, contextLimit: contextLimit,
                    chatTemplate: chatTemplate, kvCacheType: kvCacheType, prefixCacheMiB: prefixCacheMiB,
                    speculativeLookup: speculativeLookup, draftModelPath: draftModel, draftTokens: draftTokens,
                    clock: clock)
                logger.info(
                    "model loaded",
                    [
                        "model": engine.modelName, "architecture": engine.architecture,
                        "kernels": CPUKernels.name,
                        "weight_types": engine.weightTypes.joined(separator: ","),
                        "weight_copies": engine.weightResidency?.copies.rawValue ?? "",
                        "weight_bytes": "\(engine.weightResidency?.totalBytes ?? 0)",
                        "weight_copied_bytes": "\(engine.weightResidency?.copiedBytes ?? 0)",
                        "weight_mapped_bytes": "\(engine.weightResidency?.mappedBytes ?? 0)",
                        "weight_active_bytes_per_token": "\(engine.weightResidency?.activeBytesPerToken ?? 0)",
                        "context_length": "\(engine.contextLength)", "kv_cache_type": "\(kvCacheType)",
                        "prefix_cache_mib": "\(prefixCacheMiB)", "speculative_lookup": "\(speculativeLookup)",
                        "draft_model": draftModel ?? "",
                        "duration_ms": "\(Int((ContinuousClock.now - start).milliseconds))",
                    ])
                finish(.ready(engine))
            } catch {
                logger.error("model load failed", ["path": path, "error": "\(error)"])
                finish(.failed("\(error)"))
                onFailure()
            }
        }
        thread.name = "inferd-model-load"
        thread.start()
    }

    /// Starts the remote backend in the background (asking the upstreams' `/models` for the
    /// model name and context length unless both are configured) and returns at once.
    public func connect(
        upstream settings: UpstreamSettings, metrics: Metrics = Metrics(), logger: Logger,
        onFailure: @escaping @Sendable () -> Void = {}
    ) {
        let thread = Thread { [self] in
            logger.info(
                "upstream connecting",
                ["upstreams": settings.endpoints.map(\.displayURL).joined(separator: ","), "model": settings.model])
            do {
                let backend = try OpenAIRemoteBackend.connect(settings: settings, logger: logger, metrics: metrics)
                backend.startHealthChecks()
                logger.info(
                    "model loaded",
                    [
                        "model": backend.modelName, "architecture": backend.architecture,
                        "context_length": "\(backend.contextLength)",
                        "upstreams": settings.endpoints.map(\.displayURL).joined(separator: ","),
                    ])
                finish(.ready(backend))
            } catch {
                logger.error("upstream unusable", ["error": "\(error)"])
                finish(.failed("\(error)"))
                onFailure()
            }
        }
        thread.name = "inferd-upstream-connect"
        thread.start()
    }

    /// Sets the state directly (tests, and `generate`, which loads in the foreground).
    public func finish(_ newState: State) {
        var shared: (any GenerationBackend)?
        var session: (any GenerationBackend)?
        if case .ready(let backend) = newState {
            let limited: any GenerationBackend =
                perKeyMaxGenerations > 0
                ? TenantShareBackend(wrapping: backend, limit: perKeyMaxGenerations, clock: clock) : backend
            shared = singleFlight ? SingleFlightBackend.over(limited) : limited
            session = limited
        }
        state.withLock { $0 = (newState, shared, session) }
    }
}
