import Engine
import Foundation
import Telemetry

/// Every setting of `inferd serve`. Each has one name in three spellings: key `snake_case`
/// (config file), flag `--kebab-case`, environment `INFERD_UPPER_SNAKE`.
/// Precedence: flags > environment > file > built-in defaults.
public struct ServerConfiguration: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var model = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    public var threads = ProcessInfo.processInfo.activeProcessorCount
    /// Most tokens one sequence may hold (prompt and answer); 0 keeps the model's own context.
    public var contextLength = 0
    /// How KV caches store keys and values: f16 (the reference's answers) or q8_0 (about half
    /// the memory per token).
    public var kvCacheType = KVCacheType.f16
    public var dataDir = "data"
    /// "" (sessions in SQLite under `data_dir`) or a `postgres://` URL: sessions in PostgreSQL,
    /// shared by every server that names the same database. Never logged with its password.
    public var storeURL = ""
    /// A file holding the PostgreSQL password (overrides the URL's and `PGPASSWORD`).
    public var storePasswordFile = ""
    /// This server's name among replicas: every response carries it (`X-Inferd-Replica`), so a
    /// load balancer's affinity can be seen and checked. "" uses the host name.
    public var replicaId = ""
    public var logFormat = Logger.Format.text
    public var logLevel = Logger.Level.info
    public var maxBodyBytes = 1 << 20
    public var heartbeatSeconds = 10.0
    public var drainSeconds = 10.0
    public var connectionLimit = 512
    public var perIPConnectionLimit = 64
    /// Places of `connection_limit` that connections without a valid key yet (still sending a
    /// request's head or body) may never take.
    public var connectionReserve = 64
    public var connectionTimeoutSeconds = 30
    /// Absolute deadlines: a request's head must be in this long after the connection opened,
    /// its body this long after its head, however the bytes trickle in.
    public var headerTimeoutSeconds = 10.0
    public var bodyTimeoutSeconds = 30.0
    public var headerMemoryLimitBytes = 32 << 10
    public var defaultMaxTokens = 512
    /// Longest prompt (in tokens, after the chat template) a request may send.
    public var maxPromptTokens = 4096
    /// Largest `max_tokens` a request may ask for.
    public var maxTokensLimit = 4096
    /// Deepest array/object nesting accepted in a JSON body.
    public var maxJSONDepth = 32
    /// API keys: "" (none: no authentication), a comma-separated list, or "@/path/file" with one
    /// key per line. Never logged.
    public var apiKeys = ""
    /// A separate key for `/metrics`; "" to let `metrics_auth` decide.
    public var metricsAPIKey = ""
    /// Without `metrics_api_key`: "keys" (/metrics needs an API key like every other endpoint
    /// when keys are set) or "open" (/metrics needs none).
    public var metricsAuth = MetricsAuth.keys
    /// PEM certificate chain and private key paths; both set turns on HTTPS.
    public var tlsCert = ""
    public var tlsKey = ""
    /// Most sessions one API key (or, without keys, everyone together) may hold.
    public var maxSessionsPerKey = 100
    /// Most turns (prompts) one session's transcript may hold.
    public var maxSessionTurns = 1000
    public var maxSessionQueue = 16
    public var kvCacheMiB = 1024
    /// Memory for finished stateless requests' KV caches, from which new prompts that share
    /// their prefixes start; 0 turns the prefix cache off.
    public var prefixCacheMiB = InferenceEngine.defaultPrefixCacheMiB
    /// Tokens prompt lookup drafts per decode step for speculative decoding; 0 turns it off.
    public var speculativeLookup = InferenceEngine.defaultSpeculativeLookup
    /// A smaller model of the same vocabulary that drafts tokens for speculative decoding
    /// (empty: none), and how many it drafts per step.
    public var draftModel = ""
    public var draftTokens = InferenceEngine.defaultDraftTokens
    /// Generations the engine steps at once; the rest wait in one global queue.
    public var maxActiveSequences = 8
    /// Generations that may wait for a place; one more is refused with 503 `server_busy`.
    public var maxQueue = 64
    /// Most generations one API key holds at once, running or waiting (its fair share); one more
    /// gets 429 `key_busy`. -1: half of `max_active_sequences` + `max_queue`; 0: no limit.
    /// Without `api_keys` there is one tenant and no limit.
    public var perKeyMaxGenerations = -1
    /// How long an interactive request waits before a running background one yields its place.
    public var preemptAfterMs = 500
    /// Identical deterministic requests in flight share one generation.
    public var singleFlight = true
    /// Serve the chat page at `/` (docs/chat-page.md).
    public var ui = true
    /// Chat template override: "" (the model's own), a built-in name, or "@/path/file.jinja".
    public var chatTemplate = ""
    /// How the model writes tool calls: `auto` reads it from the chat template.
    public var toolCallFormat = ToolCallFormatSetting.auto
    /// Stored responses (`/v1/responses`, `store: true`) older than this many days are deleted.
    public var responseMaxAgeDays = 30
    /// Most stored responses of all keys together; reaching it never deletes another key's.
    public var maxStoredResponses = 10_000
    /// Per-key quotas (`ServerConfiguration+Quotas`).
    public var maxStoredResponsesPerKey = 1000
    public var maxBackgroundResponsesPerKey = 8
    public var maxItemBytes = 256 << 10
    public var maxTranscriptBytes = 1 << 20
    /// Which backend answers generations, and its upstreams (`ServerConfiguration+Upstream`).
    public var upstream = UpstreamConfiguration()

    public init() {}
}

/// A configuration problem, naming the setting and where its bad value came from.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public let description: String
    package init(_ description: String) { self.description = description }
}

extension ServerConfiguration {
    /// How one setting is named, checked and stored.
    struct Setting: Sendable {
        enum Kind: Sendable {
            /// `optionalString` accepts "" (meaning unset).
            case string, optionalString, int, double, bool
            case choice([String])
        }
        let key: String
        let kind: Kind
        let help: String
        let minimum: Double?
        /// Shown as "(set)" in summaries: the value is a secret or names one.
        var secret = false
        let apply: @Sendable (inout ServerConfiguration, Value) -> Void
        let read: @Sendable (ServerConfiguration) -> Value

        var flag: String { "--" + key.replacingOccurrences(of: "_", with: "-") }
        var environment: String { "INFERD_" + key.uppercased() }
    }

    enum Value: Sendable, Equatable, CustomStringConvertible {
        case string(String), int(Int), double(Double), bool(Bool)
        var description: String {
            switch self {
            case .string(let s): s
            case .int(let i): "\(i)"
            case .double(let d): "\(d)"
            case .bool(let b): "\(b)"
            }
        }
    }

    static let settings: [Setting] = coreSettings + remoteSettings + quotaSettings

    private static let coreSettings: [Setting] = [
        str("host", "Address to listen on.", \.host),
        int("port", "TCP port; 0 picks a free one and logs it.", \.port, min: 0),
        str("model", "Path to the GGUF model file.", \.model),
        int("threads", "Compute threads for the model (default: number of cores).", \.threads, min: 1),
        int(
            "context_length",
            "Most tokens one sequence holds, prompt and answer (0: the model's own; Gemma 3 declares 32768).",
            \.contextLength, min: 0),
        choice(
            "kv_cache_type",
            "How KV caches store keys and values: f16, or q8_0 (34 bytes per 32 values instead of 64; answers can differ slightly from f16's).",
            \.kvCacheType),
        str("data_dir", "Folder for server state (sessions live in inferd.sqlite there).", \.dataDir),
        str(
            "store_url",
            "postgres://user@host:port/db: sessions in PostgreSQL, shared by replicas. Empty: SQLite in data_dir.",
            \.storeURL, optional: true, secret: true),
        str(
            "store_password_file", "File holding the PostgreSQL password (else the URL's or PGPASSWORD).",
            \.storePasswordFile, optional: true),
        str(
            "replica_id", "This replica's name in the X-Inferd-Replica header (empty: the host name).", \.replicaId,
            optional: true),
        choice("log_format", "Log line format.", \.logFormat),
        choice("log_level", "Lowest level logged.", \.logLevel),
        int("max_body_bytes", "Largest request body accepted; larger gets 413.", \.maxBodyBytes, min: 1),
        dbl(
            "heartbeat_seconds", "Seconds of silence before an SSE stream sends a ': ping' comment.", \.heartbeatSeconds
        ),
        dbl(
            "drain_seconds", "On SIGTERM/SIGINT, how long in-flight requests may finish before being cancelled.",
            \.drainSeconds),
        int("connection_limit", "Most connections open at once.", \.connectionLimit, min: 1),
        int(
            "per_ip_connection_limit", "Most connections from one IP address (0: no limit).", \.perIPConnectionLimit,
            min: 0),
        int(
            "connection_reserve",
            "Places of connection_limit kept for clients that have shown a valid key: connections still sending a request without one hold at most the rest, past it the oldest is closed.",
            \.connectionReserve, min: 0),
        int(
            "connection_timeout_seconds", "Silent connections are closed after this long (any byte resets it).",
            \.connectionTimeoutSeconds, min: 1),
        dbl(
            "header_timeout_seconds",
            "A request's line and headers must be complete this long after the connection opened, however slowly they trickle.",
            \.headerTimeoutSeconds, min: 0.1),
        dbl(
            "body_timeout_seconds", "A request's body must be complete this long after its headers.",
            \.bodyTimeoutSeconds, min: 0.1),
        int(
            "header_memory_limit_bytes", "Memory for one request's line and headers; more is refused.",
            \.headerMemoryLimitBytes, min: 1024),
        int("default_max_tokens", "max_tokens when a request gives none.", \.defaultMaxTokens, min: 1),
        int(
            "max_prompt_tokens", "Longest prompt in tokens (after the chat template); longer gets 400.",
            \.maxPromptTokens, min: 1),
        int("max_tokens_limit", "Largest max_tokens a request may ask for; more gets 400.", \.maxTokensLimit, min: 1),
        int(
            "max_json_depth", "Deepest array/object nesting in a JSON body; deeper gets 400.", \.maxJSONDepth, min: 2),
        str(
            "api_keys",
            "API keys: a comma-separated list, or @/path/file with one key per line. Empty: no authentication.",
            \.apiKeys, optional: true, secret: true),
        str(
            "metrics_api_key", "A key only for /metrics (empty: metrics_auth decides).", \.metricsAPIKey,
            optional: true, secret: true),
        choice("metrics_auth", "Without metrics_api_key: keys (/metrics needs an API key) or open.", \.metricsAuth),
        str("tls_cert", "PEM certificate chain path; with tls_key turns on HTTPS.", \.tlsCert, optional: true),
        str("tls_key", "PEM private key path for tls_cert.", \.tlsKey, optional: true),
        int(
            "max_sessions_per_key", "Most sessions one API key holds (without keys: all together); more get 429.",
            \.maxSessionsPerKey, min: 1),
        int(
            "max_session_turns", "Most turns one session's transcript holds; one more gets 409 session_full.",
            \.maxSessionTurns, min: 1),
        int(
            "max_session_queue", "Most requests waiting in one session (on_busy queue); more get 429.",
            \.maxSessionQueue, min: 0),
        int(
            "kv_cache_mib", "Memory for all sessions' kept KV caches; past it the least recently used is dropped.",
            \.kvCacheMiB, min: 0),
        int(
            "prefix_cache_mib",
            "Memory for finished requests' KV caches, from which prompts sharing their prefixes start (0: off).",
            \.prefixCacheMiB, min: 0),
        int(
            "speculative_lookup",
            "Tokens drafted per decode step from earlier text (prompt lookup) and checked in one pass; the answer is unchanged (0: off).",
            \.speculativeLookup, min: 0),
        str(
            "draft_model",
            "A smaller GGUF model of the same vocabulary that drafts tokens for speculative decoding (instead of speculative_lookup); the answer is unchanged. Empty: none.",
            \.draftModel, optional: true),
        int("draft_tokens", "Tokens the draft model proposes per decode step.", \.draftTokens, min: 1),
        int(
            "response_max_age_days", "Stored /v1/responses older than this many days are deleted.",
            \.responseMaxAgeDays, min: 1),
        int(
            "max_stored_responses",
            "Most stored /v1/responses of all keys together; past it a key stores only by giving up its own oldest finished one, else 429.",
            \.maxStoredResponses, min: 1),
        int(
            "max_active_sequences", "Generations the engine runs at once (one batched pass); the rest wait in a queue.",
            \.maxActiveSequences, min: 1),
        int(
            "max_queue", "Generations that may wait for a place; one more gets 503 server_busy with Retry-After.",
            \.maxQueue, min: 0),
        int(
            "per_key_max_generations",
            "Most generations one API key holds, running or waiting; more get 429 key_busy (-1: half of max_active_sequences + max_queue; 0: no limit).",
            \.perKeyMaxGenerations, min: -1),
        int(
            "preempt_after_ms", "How long an interactive request waits before a running background one is parked.",
            \.preemptAfterMs, min: 0),
        bool(
            "single_flight",
            "Identical deterministic requests (greedy or seeded, not in a session) arriving while one runs share its generation.",
            \.singleFlight),
        bool(
            "ui",
            "Serve the chat page at / (its files under /ui/; no key needed to load it, its API calls need one when keys are set). false: / is 404.",
            \.ui),
        str(
            "chat_template",
            "Chat template instead of the model's: chatml, llama3, gemma, qwen, phi3, or @/path/template.jinja. Empty: the model's own.",
            \.chatTemplate, optional: true),
        choice(
            "tool_call_format",
            "How the model writes tool calls: auto (read from the chat template: <tool_call> hermes, <|python_tag|> llama3_json, else generic), hermes, llama3_json, pythonic or generic.",
            \.toolCallFormat),
    ]

    static func str(
        _ key: String, _ help: String, _ path: WritableKeyPath<ServerConfiguration, String> & Sendable,
        optional: Bool = false, secret: Bool = false
    ) -> Setting {
        Setting(
            key: key, kind: optional ? .optionalString : .string, help: help, minimum: nil, secret: secret,
            apply: { c, v in if case .string(let s) = v { c[keyPath: path] = s } },
            read: { .string($0[keyPath: path]) })
    }

    /// A setting whose values are an enum's: checked against its names as it is read, stored as the enum.
    static func choice<T: SettingChoice>(
        _ key: String, _ help: String, _ path: WritableKeyPath<ServerConfiguration, T> & Sendable
    ) -> Setting {
        Setting(
            key: key, kind: .choice(T.allCases.map(\.settingName)), help: help, minimum: nil,
            apply: { c, v in
                if case .string(let s) = v, let value = T(settingName: s) { c[keyPath: path] = value }
            },
            read: { .string($0[keyPath: path].settingName) })
    }

    static func int(
        _ key: String, _ help: String, _ path: WritableKeyPath<ServerConfiguration, Int> & Sendable, min: Int
    ) -> Setting {
        Setting(
            key: key, kind: .int, help: help, minimum: Double(min),
            apply: { c, v in if case .int(let i) = v { c[keyPath: path] = i } },
            read: { .int($0[keyPath: path]) })
    }

    static func bool(
        _ key: String, _ help: String, _ path: WritableKeyPath<ServerConfiguration, Bool> & Sendable
    ) -> Setting {
        Setting(
            key: key, kind: .bool, help: help, minimum: nil,
            apply: { c, v in if case .bool(let b) = v { c[keyPath: path] = b } },
            read: { .bool($0[keyPath: path]) })
    }

    static func dbl(
        _ key: String, _ help: String, _ path: WritableKeyPath<ServerConfiguration, Double> & Sendable,
        min: Double = 0
    ) -> Setting {
        Setting(
            key: key, kind: .double, help: help, minimum: min,
            apply: { c, v in if case .double(let d) = v { c[keyPath: path] = d } },
            read: { .double($0[keyPath: path]) })
    }
}

extension ServerConfiguration {
    /// `replica_id`, or the host name when it is not set.
    public var effectiveReplicaId: String {
        replicaId.isEmpty ? ProcessInfo.processInfo.hostName : replicaId
    }
}
