import Backend
import Engine
import HTTPServer
import Sessions

/// The one mapping from what the layers below report to what a client is told: status, type and
/// code. Routes translate these into their wire format (`OpenAIError` for OpenAI's surfaces).
extension HTTPError {
    /// A generation's error (the code is `GenerationError.code`, which the session metrics count by too).
    init(_ error: GenerationError) {
        switch error {
        case .contextOverflow:
            self.init(status: 400, message: "\(error)", type: "invalid_request_error", code: error.code)
        case .emptyPrompt:
            self = .badRequest("\(error)", code: error.code)
        case .invalidOption(let name, _):
            self = .badRequest("invalid options: \(error)", code: error.code, param: name)
        case .shuttingDown:
            self = .serviceUnavailable("\(error)", code: error.code)
        case .computeFailed:
            self.init(status: 500, message: "\(error)", type: "server_error", code: error.code)
        case .serverBusy(_, let retryAfter):
            self.init(
                status: 503, message: "\(error); retry in about \(retryAfter) s", type: "server_error",
                code: error.code, retryAfterSeconds: retryAfter)
        case .queueTimeout:
            self.init(
                status: 503, message: "\(error) (timeout_seconds passed before it started)", type: "server_error",
                code: error.code, param: "timeout_seconds")
        case .upstreamUnavailable(_, let retryAfter):
            self.init(
                status: 503, message: "\(error)", type: "server_error", code: error.code, retryAfterSeconds: retryAfter)
        case .upstreamRejected(let status, _) where [401, 403, 407].contains(status):
            // The upstream refused this server's credentials: not the client's fault.
            self.init(status: 502, message: "\(error)", type: "server_error", code: error.code)
        case .upstreamRejected(let status, _):
            self.init(status: status, message: "\(error)", type: "invalid_request_error", code: error.code)
        case .upstreamFailed:
            self.init(status: 502, message: "\(error)", type: "server_error", code: error.code)
        }
    }

    /// A conversation the chat template cannot render (or no template): 400 `invalid_request`.
    init(_ error: ChatTemplateError) {
        self = .badRequest("\(error)", code: "invalid_request")
    }

    /// A store failure: unreachable is 503 `store_unavailable` (retry later).
    init(_ error: StoreError) {
        self =
            error.unavailable
            ? HTTPError(
                status: 503, message: "the session store is unavailable: \(error)", type: "server_error",
                code: "store_unavailable")
            : HTTPError(status: 500, message: "\(error)", type: "server_error", code: "storage_error")
    }

    init(_ error: SessionError) {
        switch error {
        case .sessionNotFound(let id): self = .notFound("no session \(id)", code: "session_not_found")
        case .requestNotFound(let id): self = .notFound("no request \(id)", code: "request_not_found")
        case .busy: self = .conflict("\(error)", code: "session_busy")
        case .queueFull: self = .tooManyRequests("\(error)", code: "session_queue_full")
        case .duplicateRequest: self = .conflict("\(error)", code: "duplicate_request")
        case .entryNotFound: self = .notFound("\(error)", code: "entry_not_found")
        case .generation(let e): self.init(e)
        case .storage: self.init(status: 500, message: "\(error)", type: "server_error", code: "storage_error")
        case .storeUnavailable:
            self.init(status: 503, message: "\(error)", type: "server_error", code: "store_unavailable")
        case .chatTemplate(let e): self.init(e)
        }
    }

    /// A request's numbers past the server's limits, naming the field as `names` spells it.
    init(_ violation: GenerationLimits.Violation, names: FieldNames) {
        switch violation {
        case .maxTokensBelowOne:
            self = .badRequest(
                "\(names.maxTokens) must be at least 1", code: "invalid_option", param: names.maxTokensParam)
        case .contextOverflow(let p, let m, let c):
            self.init(GenerationError.contextOverflow(promptTokens: p, maxTokens: m, contextLength: c))
            param = names.prompt
        case .promptTooLong(let p, let limit):
            self = .badRequest(
                "the prompt is \(p) tokens; this server accepts at most \(limit)", code: "prompt_too_long",
                param: names.prompt)
        case .maxTokensTooLarge(let m, let limit):
            self = .badRequest(
                "\(names.maxTokens) is \(m); this server allows at most \(limit)", code: "max_tokens_too_large",
                param: names.maxTokensParam)
        }
    }
}
