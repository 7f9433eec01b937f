import Foundation
import RemoteBackend

/// `backend`: the engine in this process, or an OpenAI-compatible upstream.
public enum BackendKind: String, SettingChoice {
    case local, openai

    var settingName: String { rawValue }
}

/// The remote backend's settings (used when `backend` is `openai`).
public struct UpstreamConfiguration: Sendable, Equatable {
    public var backend = BackendKind.local
    /// Comma-separated base URLs, e.g. `http://10.0.0.5:8000/v1`, each optionally followed by
    /// `#weight=N&max_active=N` (see `UpstreamEndpoint`).
    public var upstream = ""
    public var model = ""
    /// The upstream's API key itself (from the environment, `INFERD_UPSTREAM_API_KEY`, or a flag);
    /// never logged.
    public var apiKey = ""
    /// A file holding the upstream's API key (first line); never logged.
    public var apiKeyFile = ""
    public var connectTimeoutSeconds = 5.0
    public var firstByteTimeoutSeconds = 120.0
    public var idleTimeoutSeconds = 30.0
    /// Longest line an upstream's stream may send.
    public var maxLineBytes = 1 << 20
    /// Health checks: the interval, the failures that mark an upstream down, the successes that
    /// mark it up, a check's timeout (`HealthCheckPolicy`'s defaults).
    public var healthIntervalSeconds = 5.0
    public var downAfter = 2
    public var upAfter = 1
    public var healthTimeoutSeconds = 2.0

    public init() {}
}

extension ServerConfiguration {
    static let remoteSettings: [Setting] = [
        choice(
            "backend", "What generates: local (the model file, in this process) or openai (an upstream).",
            \.upstream.backend),
        str(
            "upstream",
            "With backend openai: base URLs of OpenAI-compatible servers, comma-separated (http://host:8000/v1), "
                + "each optionally with #weight=N&max_active=N (a fragment: never sent to the server).",
            \.upstream.upstream, optional: true),
        str(
            "upstream_model", "The model name sent upstream (empty: the first the upstream's /models lists).",
            \.upstream.model, optional: true),
        str(
            "upstream_api_key", "The upstream's API key (prefer the environment variable or upstream_api_key_file).",
            \.upstream.apiKey, optional: true, secret: true),
        str(
            "upstream_api_key_file", "A file whose first line is the upstream's API key.", \.upstream.apiKeyFile,
            optional: true, secret: true),
        dbl(
            "upstream_connect_timeout_seconds", "Longest wait for a connection to an upstream.",
            \.upstream.connectTimeoutSeconds),
        dbl(
            "upstream_first_byte_timeout_seconds", "Longest wait for an upstream's first response byte.",
            \.upstream.firstByteTimeoutSeconds),
        dbl(
            "upstream_idle_timeout_seconds", "Longest silence in an upstream's stream before it counts as stalled.",
            \.upstream.idleTimeoutSeconds),
        int(
            "upstream_max_line_bytes", "Longest line an upstream's stream may send; longer is an error.",
            \.upstream.maxLineBytes, min: 1024),
        dbl(
            "upstream_health_interval_seconds", "Time between two health checks (GET /models) of an upstream.",
            \.upstream.healthIntervalSeconds),
        int(
            "upstream_down_after",
            "Failed health checks (or unreachable requests) in a row that mark an upstream down.",
            \.upstream.downAfter, min: 1),
        int(
            "upstream_up_after", "Successful health checks in a row that mark a down upstream up again.",
            \.upstream.upAfter, min: 1),
        dbl(
            "upstream_health_timeout_seconds", "Longest a health check may take before it counts as failed.",
            \.upstream.healthTimeoutSeconds),
    ]

    /// The remote backend's settings; reads the API key file. `max_active_sequences` bounds each
    /// upstream's running generations (unless its
    /// `max_active` says otherwise), `max_queue` the generations waiting; `context_length` (when set) is the context limit.
    public func upstreamSettings() throws(ConfigurationError) -> UpstreamSettings {
        let specs = upstream.upstream.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard !specs.isEmpty else { throw ConfigurationError("backend openai needs upstream (--upstream URL)") }
        var endpoints: [UpstreamEndpoint] = []
        for spec in specs {
            do {
                endpoints.append(try UpstreamEndpoint.parse(spec))
            } catch {
                throw ConfigurationError(error.description)
            }
        }
        var key = upstream.apiKey
        if !upstream.apiKeyFile.isEmpty {
            guard let data = FileManager.default.contents(atPath: upstream.apiKeyFile) else {
                throw ConfigurationError("upstream_api_key_file: cannot read \(upstream.apiKeyFile)")
            }
            key = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            key = key.trimmingCharacters(in: .whitespaces)
        }
        var transfer = TransferOptions()
        transfer.connectTimeout = .milliseconds(Int(upstream.connectTimeoutSeconds * 1000))
        transfer.firstByteTimeout = .milliseconds(Int(upstream.firstByteTimeoutSeconds * 1000))
        transfer.idleTimeout = .milliseconds(Int(upstream.idleTimeoutSeconds * 1000))
        transfer.maxLineBytes = upstream.maxLineBytes
        let health = HealthCheckPolicy(
            interval: .milliseconds(Int(upstream.healthIntervalSeconds * 1000)), downAfter: upstream.downAfter,
            upAfter: upstream.upAfter, timeout: .milliseconds(Int(upstream.healthTimeoutSeconds * 1000)))
        return UpstreamSettings(
            endpoints: endpoints, model: upstream.model, apiKey: key.isEmpty ? nil : key, transfer: transfer,
            contextLength: contextLength, maxActivePerUpstream: maxActiveSequences, maxQueue: maxQueue, health: health)
    }
}
