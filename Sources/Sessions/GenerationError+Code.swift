import GenerationVocabulary

extension GenerationError {
    /// The code of each engine error as the session metrics label it (`inferd_session_errors_total{code}`):
    /// the same string as the HTTP answer's `ErrorCode(_:)` in InferdServer, which a test holds equal.
    public var code: String {
        switch self {
        case .contextOverflow: "context_length_exceeded"
        case .emptyPrompt: "invalid_request"
        case .invalidOption: "invalid_option"
        case .computeFailed: "generation_failed"
        case .shuttingDown: "shutting_down"
        case .serverBusy: "server_busy"
        case .tenantBusy: "key_busy"
        case .queueTimeout: "timeout"
        case .upstreamUnavailable: "upstream_unavailable"
        case .upstreamRejected: "upstream_rejected"
        case .upstreamFailed: "upstream_failed"
        }
    }
}
