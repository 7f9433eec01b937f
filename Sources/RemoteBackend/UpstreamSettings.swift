import Foundation

/// How the remote backend reaches its upstreams (OpenAI-compatible servers).
public struct UpstreamSettings: Sendable {
    /// Base URLs ending before `/chat/completions`, e.g. `http://10.0.0.5:8000/v1`.
    public var baseURLs: [String]
    /// The model name sent upstream; empty: the first model the upstream's `/models` lists.
    public var model: String
    /// Sent as `Authorization: Bearer …`; never logged.
    public var apiKey: String?
    /// Connect, first-byte and idle timeouts, and the line bound.
    public var transfer: TransferOptions
    /// Tokens a prompt and its answer may use together; 0: what the upstream's `/models` reports
    /// (`max_model_len`, `context_length` or `meta.n_ctx_train`).
    public var contextLength: Int
    /// Generations running at once on each upstream; one more is refused with `serverBusy`.
    public var maxActivePerUpstream: Int

    public init(
        baseURLs: [String], model: String = "", apiKey: String? = nil, transfer: TransferOptions = TransferOptions(),
        contextLength: Int = 0, maxActivePerUpstream: Int = 8
    ) {
        self.baseURLs = baseURLs.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.model = model
        self.apiKey = apiKey
        self.transfer = transfer
        self.contextLength = contextLength
        self.maxActivePerUpstream = maxActivePerUpstream
    }

    /// Header lines every request carries.
    var headers: [String] {
        var lines = ["Content-Type: application/json", "Accept: text/event-stream"]
        if let apiKey, !apiKey.isEmpty { lines.append("Authorization: Bearer \(apiKey)") }
        return lines
    }
}
