import Backend
import Engine
import Foundation
import HTTPServer
import Sessions
import Telemetry

/// `GET /health` (always open: a load balancer's and the container's health check) and
/// `GET /metrics` (Prometheus text).
struct OperationsRoutes: Sendable {
    let host: ModelHost
    let sessions: SessionManager
    let generations: GenerationService
    let metrics: Metrics
    let startedAt: Date

    func register(_ router: Router) {
        router.get("/health") { request in await health(request) }
        router.get("/metrics") { _ in metricsText() }
    }

    struct HealthBody: Encodable {
        var status: String
        var model: String?
        var architecture: String?
        var weightTypes: [String]?
        /// What the model's weights take in memory (a local model only).
        var weights: WeightsHealth?
        var contextLength: Int?
        var uptimeSeconds: Int
        var error: String?
        /// The session store: `ok`, or `unavailable` (session routes answer 503 meanwhile; the
        /// model still serves stateless requests, so the server stays healthy).
        var store: StoreHealth?
        /// A remote backend's upstreams, as its health checks last found them.
        var upstreams: [UpstreamStatus]?
        enum CodingKeys: String, CodingKey {
            case status, model, error, architecture, store, upstreams, weights
            case weightTypes = "weight_types"
            case contextLength = "context_length"
            case uptimeSeconds = "uptime_seconds"
        }
    }

    /// `WeightResidency` as `/health` reports it.
    struct WeightsHealth: Encodable {
        var copies: String
        var totalBytes: Int
        var copiedBytes: Int
        var mappedBytes: Int
        var activeBytesPerToken: Int
        enum CodingKeys: String, CodingKey {
            case copies
            case totalBytes = "total_bytes"
            case copiedBytes = "copied_bytes"
            case mappedBytes = "mapped_bytes"
            case activeBytesPerToken = "active_bytes_per_token"
        }

        init(_ residency: WeightResidency) {
            copies = residency.copies.rawValue
            totalBytes = residency.totalBytes
            copiedBytes = residency.copiedBytes
            mappedBytes = residency.mappedBytes
            activeBytesPerToken = residency.activeBytesPerToken
        }
    }

    struct StoreHealth: Encodable {
        var kind: String
        var status: String
        var error: String?
    }

    /// The session store's state, asked now (a shared store can go away while the server runs).
    func storeHealth() async -> StoreHealth {
        let store = sessions.environment.store
        let kind = store.isShared ? "postgresql" : "sqlite"
        do {
            try await store.checkReachable()
            return StoreHealth(kind: kind, status: "ok")
        } catch {
            return StoreHealth(kind: kind, status: "unavailable", error: "\(error)")
        }
    }

    /// 200 once the model is loaded; 503 while it loads or if it failed. Also says whether the
    /// session store is reachable. Over a remote backend it lists the upstreams: some down is
    /// `degraded` and still 200 (the others serve, so a load balancer keeps this replica); all
    /// down is `unavailable` and 503 (every generation would be refused, so it takes the replica
    /// out until a health check finds an upstream again).
    func health(_ request: HTTPRequest) async -> HTTPResponse {
        let uptime = Int(Date().timeIntervalSince(startedAt))
        switch host.current {
        case .ready(let backend):
            let upstreams = (backend as? any UpstreamReporting)?.upstreamStatuses
            let up = upstreams?.filter(\.isUp).count
            let status =
                switch (up, upstreams?.count) {
                case (0?, _): "unavailable"
                case (let u?, let n?) where u < n: "degraded"
                default: "ok"
                }
            return .json(
                HealthBody(
                    status: status, model: backend.modelName, architecture: backend.architecture,
                    weightTypes: backend.weightTypes, weights: backend.weightResidency.map(WeightsHealth.init),
                    contextLength: backend.contextLength, uptimeSeconds: uptime,
                    store: await storeHealth(), upstreams: upstreams),
                status: status == "unavailable" ? 503 : 200)
        case .loading:
            return .json(HealthBody(status: "loading", uptimeSeconds: uptime), status: 503)
        case .failed(let why):
            return .json(HealthBody(status: "failed", uptimeSeconds: uptime, error: why), status: 503)
        }
    }

    /// Prometheus text; the resident-memory and active-generation gauges are read at scrape time.
    func metricsText() -> HTTPResponse {
        metrics.gauge("process_resident_memory_bytes", help: "Resident memory of the server process in bytes.")
            .set(Double(ProcessStats.residentBytes()))
        metrics.gauge(
            "inferd_active_generations",
            help:
                "Generations the backend is working on (one shared by several requests counts once), stopping ones included."
        ).set(Double(host.backend?.activeGenerations ?? 0))
        // What an inference gateway's endpoint picker reads besides the queue
        // (`inferd_queue_length`) and the running generations (`inferd_active_sequences`).
        let caches = sessions.environment.caches
        metrics.gauge(
            "inferd_kv_cache_utilization",
            help: "Kept session KV caches as a fraction of kv_cache_mib (0 to 1; 0 when the budget is 0)."
        ).set(caches.budgetBytes > 0 ? min(1, Double(caches.usedBytes) / Double(caches.budgetBytes)) : 0)
        // Registered before the first join, so scrapers see the series from the start.
        _ = generations.singleFlightJoins
        return .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
}

public enum ProcessStats {
    /// VmRSS from /proc/self/statm (resident pages × page size); 0 where unavailable.
    public static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
