/// Every `code` a client can see in an error body (`{"error":{"code",…}}`, native or OpenAI's shape),
/// a stream's `error` event, or a failed stored response. The raw values are the wire: never
/// rename one. `docs/api.md`'s error table lists exactly these (a test holds the two equal).
public enum ErrorCode: String, CaseIterable, Sendable {
    // Request bodies and fields.
    /// The body is not JSON, is truncated, or is not UTF-8.
    case invalidJSON = "invalid_json"
    /// A route that takes a body got none.
    case missingBody = "missing_body"
    /// Arrays and objects nest deeper than the server's limit.
    case jsonTooDeep = "json_too_deep"
    /// An object in the body gives the same key twice (at any depth): readers disagree on which counts.
    case duplicateKey = "duplicate_key"
    /// A required field is missing, a policy is not one of its names, or the request cannot be rendered.
    case invalidRequest = "invalid_request"
    /// A field holds a value of the right JSON kind but outside what it accepts.
    case invalidValue = "invalid_value"
    /// An OpenAI route's field holds a value of the wrong JSON type.
    case invalidType = "invalid_type"
    /// An OpenAI route's required field is missing.
    case missingRequiredParameter = "missing_required_parameter"
    /// A field the route does not have, at any level.
    case unknownParameter = "unknown_parameter"
    /// An OpenAI route's parameter this server does not implement.
    case unsupportedParameter = "unsupported_parameter"
    /// A feature the backend or this place cannot serve (structured output on a backend without it,
    /// a format in a session's default options).
    case unsupported = "unsupported"
    /// A sampling option outside its rule.
    case invalidOption = "invalid_option"
    /// The prompt plus the requested completion does not fit the model's context.
    case contextLengthExceeded = "context_length_exceeded"
    /// The prompt is longer than the server's `max_prompt_tokens`.
    case promptTooLong = "prompt_too_long"
    /// The requested completion is longer than the server allows.
    case maxTokensTooLarge = "max_tokens_too_large"
    /// A JSON Schema uses a keyword structured output does not support.
    case unsupportedSchemaKeyword = "unsupported_schema_keyword"
    /// A JSON Schema (or JSON mode's schema) is malformed or cannot be compiled.
    case invalidSchema = "invalid_schema"
    /// A GBNF grammar is malformed or cannot be compiled.
    case invalidGrammar = "invalid_grammar"
    /// The body is larger than `max_body_bytes`.
    case payloadTooLarge = "payload_too_large"
    /// The body's Content-Type is not `application/json`.
    case unsupportedMediaType = "unsupported_media_type"
    /// The path exists but not with this method.
    case methodNotAllowed = "method_not_allowed"

    // API keys.
    /// API keys are on and the request has no `Authorization` header.
    case missingAPIKey = "missing_api_key"
    /// The `Authorization` header is not `Bearer KEY`.
    case invalidAuthorization = "invalid_authorization"
    /// The bearer key is not one of the server's keys.
    case invalidAPIKey = "invalid_api_key"

    // Things that do not exist.
    /// No route has this path.
    case notFound = "not_found"
    /// The request names a model this server does not serve.
    case modelNotFound = "model_not_found"
    /// No session with this id (or not one the key may see).
    case sessionNotFound = "session_not_found"
    /// No request with this id in the session.
    case requestNotFound = "request_not_found"
    /// A transcript edit names an entry the session does not hold.
    case entryNotFound = "entry_not_found"
    /// No stored response with this id.
    case responseNotFound = "response_not_found"
    /// No conversation with this id.
    case conversationNotFound = "conversation_not_found"
    /// No item with this id in the conversation.
    case itemNotFound = "item_not_found"

    // Sessions, conversations and stored responses.
    /// The session is running a turn and the turn's `on_busy` is `reject`.
    case sessionBusy = "session_busy"
    /// The session's queue of waiting turns is full.
    case sessionQueueFull = "session_queue_full"
    /// The session (or conversation) holds the most turns this server keeps.
    case sessionFull = "session_full"
    /// The API key already holds the most sessions allowed.
    case sessionLimit = "session_limit"
    /// The API key holds the most its quota allows (stored or background responses, transcript
    /// bytes); `param` names the quota's setting.
    case quotaExceeded = "quota_exceeded"
    /// A turn reuses a request id the session already has.
    case duplicateRequest = "duplicate_request"
    /// The turn runs on another server sharing the store; the cancel must go there.
    case runningOnAnotherServer = "running_on_another_server"
    /// A stored response (or a `previous_response_id`) is still running.
    case responseInProgress = "response_in_progress"
    /// A cancel names a foreground response, which only its client's disconnect stops.
    case notBackground = "not_background"
    /// A cross-replica cancel of a background response is not confirmed yet.
    case cancelPending = "cancel_pending"

    // The server, its engine and its upstream.
    /// The model has not finished loading.
    case modelLoading = "model_loading"
    /// The model failed to load.
    case modelUnavailable = "model_unavailable"
    /// The engine's queue is full; sent with `Retry-After`.
    case serverBusy = "server_busy"
    /// The API key already holds its share of generations (`per_key_max_generations`); sent
    /// with `Retry-After` (429: the key's limit, not the server's).
    case keyBusy = "key_busy"
    /// `timeout_seconds` passed before the request got a place.
    case timeout = "timeout"
    /// The request was cancelled by its owner (a session turn through the OpenAI chat route, a
    /// request whose task was stopped with a reason).
    case cancelled = "cancelled"
    /// The engine failed while generating.
    case generationFailed = "generation_failed"
    /// The engine is shutting down and takes no more generations.
    case shuttingDown = "shutting_down"
    /// The HTTP server is shutting down and takes no more requests.
    case unavailable = "unavailable"
    /// A handler failed in a way no other code names.
    case internalError = "internal_error"
    /// A stored response ended without a result.
    case serverError = "server_error"
    /// A background response was interrupted because its server stopped.
    case serverStopped = "server_stopped"
    /// The session or response store failed.
    case storageError = "storage_error"
    /// The PostgreSQL store is unreachable after start-up.
    case storeUnavailable = "store_unavailable"
    /// A remote engine's upstream is unreachable or busy; sent with `Retry-After`.
    case upstreamUnavailable = "upstream_unavailable"
    /// A remote engine's upstream refused the request with a 4xx.
    case upstreamRejected = "upstream_rejected"
    /// A remote engine's upstream failed once it had the request.
    case upstreamFailed = "upstream_failed"
}
