import Backend
import Engine
import HTTPServer
import Sessions

/// The one mapping from what the layers below report to what a client is told: status, type and
/// code. Routes translate these into their wire format (`OpenAIError` for OpenAI's surfaces).
extension HTTPError {
    /// A generation's error, with its code from `ErrorCode(_:)`.
    init(_ error: GenerationError) {
        switch error {
        case .contextOverflow:
            self.init(status: 400, message: "\(error)", type: "invalid_request_error", code: ErrorCode(error))
        case .emptyPrompt:
            self = .badRequest("\(error)", code: ErrorCode(error))
        case .invalidOption(let name, _):
            self = .badRequest("invalid options: \(error)", code: ErrorCode(error), param: name)
        case .shuttingDown:
            self = .serviceUnavailable("\(error)", code: ErrorCode(error))
        case .computeFailed:
            self.init(status: 500, message: "\(error)", type: "server_error", code: ErrorCode(error))
        case .serverBusy(_, let retryAfter):
            self.init(
                status: 503, message: "\(error); retry in about \(retryAfter) s", type: "server_error",
                code: ErrorCode(error), retryAfterSeconds: retryAfter)
        case .tenantBusy(_, _, let retryAfter):
            self.init(
                status: 429, message: "\(error); retry in about \(retryAfter) s", type: "rate_limit_error",
                code: ErrorCode(error), retryAfterSeconds: retryAfter)
        case .queueTimeout:
            self.init(
                status: 503, message: "\(error) (timeout_seconds passed before it started)", type: "server_error",
                code: ErrorCode(error), param: "timeout_seconds")
        case .upstreamUnavailable(_, let retryAfter):
            self.init(
                status: 503, message: "\(error)", type: "server_error", code: ErrorCode(error),
                retryAfterSeconds: retryAfter)
        case .upstreamRejected(.credentials, _):
            // The upstream refused this server's credentials: not the client's fault.
            self.init(status: 502, message: "\(error)", type: "server_error", code: ErrorCode(error))
        case .upstreamRejected(let rejection, _):
            self.init(
                status: Self.status(of: rejection), message: "\(error)", type: "invalid_request_error",
                code: ErrorCode(error))
        case .upstreamFailed:
            self.init(status: 502, message: "\(error)", type: "server_error", code: ErrorCode(error))
        }
    }

    /// The status a client is told for an upstream's refusal of its request.
    static func status(of rejection: UpstreamRejection) -> Int {
        switch rejection {
        case .invalidRequest: 400
        case .notFound: 404
        case .tooLarge: 413
        case .unprocessable: 422
        case .credentials: 502
        }
    }

    /// A conversation the chat template cannot render (or no template): 400 `invalid_request`.
    init(_ error: ChatTemplateError) {
        self = .badRequest("\(error)", code: .invalidRequest)
    }

    /// A store failure: unreachable is 503 `store_unavailable` (retry later).
    init(_ error: StoreError) {
        self =
            error.unavailable
            ? HTTPError(
                status: 503, message: "the session store is unavailable: \(error)", type: "server_error",
                code: .storeUnavailable)
            : HTTPError(status: 500, message: "\(error)", type: "server_error", code: .storageError)
    }

    init(_ error: SessionError) {
        switch error {
        case .sessionNotFound(let id): self = .notFound("no session \(id)", code: .sessionNotFound)
        case .requestNotFound(let id): self = .notFound("no request \(id)", code: .requestNotFound)
        case .busy: self = .conflict("\(error)", code: .sessionBusy)
        case .queueFull: self = .tooManyRequests("\(error)", code: .sessionQueueFull)
        case .duplicateRequest: self = .conflict("\(error)", code: .duplicateRequest)
        case .entryNotFound: self = .notFound("\(error)", code: .entryNotFound)
        case .generation(let e): self.init(e)
        case .storage: self.init(status: 500, message: "\(error)", type: "server_error", code: .storageError)
        case .storeUnavailable:
            self.init(status: 503, message: "\(error)", type: "server_error", code: .storeUnavailable)
        case .chatTemplate(let e): self.init(e)
        }
    }

    /// A request's numbers past the server's limits, naming the field as `names` spells it.
    init(_ violation: GenerationLimits.Violation, names: FieldNames) {
        switch violation {
        case .maxTokensBelowOne:
            self = .badRequest(
                "\(names.maxTokens) must be at least 1", code: .invalidOption, param: names.maxTokensParam)
        case .contextOverflow(let p, let m, let c):
            self.init(GenerationError.contextOverflow(promptTokens: p, maxTokens: m, contextLength: c))
            param = names.prompt
        case .promptTooLong(let p, let limit):
            self = .badRequest(
                "the prompt is \(p) tokens; this server accepts at most \(limit)", code: .promptTooLong,
                param: names.prompt)
        case .maxTokensTooLarge(let m, let limit):
            self = .badRequest(
                "\(names.maxTokens) is \(m); this server allows at most \(limit)", code: .maxTokensTooLarge,
                param: names.maxTokensParam)
        }
    }
}

extension ErrorCode {
    /// The wire code of each engine error. The session metrics label their errors with
    /// `GenerationError.code` (Sessions does not see the HTTP layer); a test holds the two equal.
    init(_ error: GenerationError) {
        switch error {
        case .contextOverflow: self = .contextLengthExceeded
        case .emptyPrompt: self = .invalidRequest
        case .invalidOption: self = .invalidOption
        case .computeFailed: self = .generationFailed
        case .shuttingDown: self = .shuttingDown
        case .serverBusy: self = .serverBusy
        case .tenantBusy: self = .keyBusy
        case .queueTimeout: self = .timeout
        case .upstreamUnavailable: self = .upstreamUnavailable
        case .upstreamRejected: self = .upstreamRejected
        case .upstreamFailed: self = .upstreamFailed
        }
    }
}
