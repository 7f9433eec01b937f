import Foundation

/// How the remote backend reaches its upstreams (OpenAI-compatible servers).
public struct UpstreamSettings: Sendable {
    /// The upstreams, their weights and place limits.
    public var endpoints: [UpstreamEndpoint]
    /// Base URLs ending before `/chat/completions`, e.g. `http://10.0.0.5:8000/v1`.
    public var baseURLs: [String] { endpoints.map(\.url) }
    /// The model name sent upstream; empty: the first model the upstream's `/models` lists.
    public var model: String
    /// Sent as `Authorization: Bearer …`; never logged.
    public var apiKey: String?
    /// Connect, first-byte and idle timeouts, and the line bound.
    public var transfer: TransferOptions
    /// Tokens a prompt and its answer may use together; 0: what the upstream's `/models` reports
    /// (`max_model_len`, `context_length` or `meta.n_ctx_train`).
    public var contextLength: Int
    /// Generations running at once on an upstream that sets no `max_active` of its own.
    public var maxActivePerUpstream: Int
    /// Generations that may wait for a place on any upstream; one more is refused with
    /// `serverBusy` (`max_queue`).
    public var maxQueue: Int
    /// How upstreams are watched and marked down and up.
    public var health: HealthCheckPolicy

    public init(
        baseURLs: [String], model: String = "", apiKey: String? = nil, transfer: TransferOptions = TransferOptions(),
        contextLength: Int = 0, maxActivePerUpstream: Int = 8, maxQueue: Int = 0,
        health: HealthCheckPolicy = HealthCheckPolicy()
    ) {
        self.init(
            endpoints: baseURLs.map { UpstreamEndpoint(url: $0) }, model: model, apiKey: apiKey, transfer: transfer,
            contextLength: contextLength, maxActivePerUpstream: maxActivePerUpstream, maxQueue: maxQueue,
            health: health)
    }

    public init(
        endpoints: [UpstreamEndpoint], model: String = "", apiKey: String? = nil,
        transfer: TransferOptions = TransferOptions(), contextLength: Int = 0, maxActivePerUpstream: Int = 8,
        maxQueue: Int = 0, health: HealthCheckPolicy = HealthCheckPolicy()
    ) {
        self.endpoints = endpoints
        self.model = model
        self.apiKey = apiKey
        self.transfer = transfer
        self.contextLength = contextLength
        self.maxActivePerUpstream = max(1, maxActivePerUpstream)
        self.maxQueue = max(0, maxQueue)
        self.health = health
    }

    /// The place limit of upstream `i`.
    func maxActive(_ i: Int) -> Int { endpoints[i].maxActive ?? maxActivePerUpstream }

    /// Header lines every request carries.
    var headers: [String] {
        var lines = ["Content-Type: application/json", "Accept: text/event-stream"]
        if let apiKey, !apiKey.isEmpty { lines.append("Authorization: Bearer \(apiKey)") }
        return lines
    }
}
