import GenerationVocabulary

extension GenerationError {
    /// The one wire code of each engine error: the HTTP answers (`GenerationService.httpError(for:)`) and
    /// the session metrics (`inferd_session_errors_total{code}`) both use it, so they cannot disagree.
    public var code: String {
        switch self {
        case .contextOverflow: "context_length_exceeded"
        case .emptyPrompt: "invalid_request"
        case .invalidOption: "invalid_option"
        case .computeFailed: "generation_failed"
        case .shuttingDown: "shutting_down"
        case .serverBusy: "server_busy"
        case .queueTimeout: "timeout"
        case .upstreamUnavailable: "upstream_unavailable"
        case .upstreamRejected: "upstream_rejected"
        case .upstreamFailed: "upstream_failed"
        }
    }
}
