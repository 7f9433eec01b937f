import Backend
import Foundation
import GenerationVocabulary

/// One generation's exchange with the upstream: the request body, the stream's events, the
/// result, and how each way it can end is told to the caller.
extension OpenAIRemoteBackend {
    /// What one attempt at one upstream came to.
    private enum Attempt {
        case result(GenerationResult)
        /// The request never reached it: another upstream may be tried.
        case unreachable(String)
    }

    /// The stream's state, written only on the transfer's thread while it runs and read here
    /// after it has returned.
    private final class StreamState: @unchecked Sendable {
        var decoder = OpenAIStreamDecoder()
        var firstContent: ContinuousClock.Instant?
    }

    /// Waits for the ticket's upstream, then runs the generation there; an upstream that could
    /// not be reached before anything was sent is left for another that can take it now, once.
    func run(
        _ request: BackendRequest, ticket: UpstreamDispatcher.Ticket, path: String, body: Data,
        onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) async throws(GenerationError) -> GenerationResult {
        var upstream: Int
        switch await dispatcher.admission(ticket) {
        case .cancelled: return Self.endedBeforeStart(request)
        case .failed(let error): throw error
        case .upstream(let i): upstream = i
        }
        var since = ContinuousClock.now
        var tries = 0
        while true {
            let attempt: Attempt
            do {
                attempt = try await attemptOnce(
                    upstream: upstream, path: path, body: body, request: request, onEvent: onEvent)
            } catch {
                dispatcher.release(upstream, since: since, tenant: ticket.tenant)
                throw error
            }
            switch attempt {
            case .result(let result):
                dispatcher.release(upstream, since: since, tenant: ticket.tenant)
                observe(upstream, reachable: true)
                return result
            case .unreachable(let message):
                logger.warning(
                    "upstream unreachable",
                    [
                        "upstream": settings.endpoints[upstream].displayURL, "request_id": request.label,
                        "error": message,
                    ])
                observe(upstream, reachable: false)
                tries += 1
                // Refused or unreachable before anything was sent: another upstream once, no more.
                guard tries < 2, !Task.isCancelled else {
                    dispatcher.release(upstream, since: since, tenant: ticket.tenant)
                    throw .upstreamUnavailable(message, retryAfterSeconds: 2)
                }
                guard let next = dispatcher.retarget(from: upstream, since: since, tenant: ticket.tenant) else {
                    throw .upstreamUnavailable(message, retryAfterSeconds: 2)
                }
                upstream = next
                since = .now
            }
        }
    }

    /// The result of a generation cancelled while it waited: nothing was sent.
    static func endedBeforeStart(_ request: BackendRequest) -> GenerationResult {
        GenerationResult(
            content: "", finishReason: .cancelled,
            usage: GenerationUsage(promptTokens: request.prompt.tokenCount, completionTokens: 0, cachedTokens: 0),
            timings: GenerationTimings(
                promptMilliseconds: 0, generationMilliseconds: 0, promptTokensPerSecond: 0,
                generationTokensPerSecond: 0),
            tokens: [], stepsAfterCancel: 0)
    }

    private func attemptOnce(
        upstream base: Int, path: String, body: Data, request: BackendRequest,
        onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) async throws(GenerationError) -> Attempt {
        let attempt: Attempt
        do {
            attempt = try await exchange(
                url: settings.endpoints[base].url + path, body: body, request: request, onEvent: onEvent)
        } catch {
            switch error {
            case .upstreamUnavailable: count(base, "unavailable")
            case .upstreamRejected: count(base, "rejected")
            case .upstreamFailed: count(base, "failed")
            default: break
            }
            throw error
        }
        switch attempt {
        case .unreachable: count(base, "unreachable")
        case .result(let r):
            count(
                base, r.finishReason == .cancelled ? "cancelled" : r.finishReason == .timeout ? "timeout" : "completed")
        }
        return attempt
    }

    private func exchange(
        url: String, body: Data, request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) async throws(GenerationError) -> Attempt {
        let stream = StreamState()
        let start = ContinuousClock.now
        let promptEstimate = request.prompt.tokenCount
        var options = settings.transfer
        options.deadline = request.deadline
        let transfer = HTTPTransfer(
            HTTPTransferRequest(url: url, method: .post, body: body, headers: settings.headers), options: options,
            onResponseStart: { onEvent(.started(promptTokens: promptEstimate, cachedTokens: 0)) },
            onLine: { line in
                switch stream.decoder.feed(line) {
                case .stop: return false
                case .none: return true
                case .grew:
                    if stream.firstContent == nil { stream.firstContent = .now }
                    onEvent(.snapshot(content: stream.decoder.content, completionTokens: stream.decoder.deltas))
                    return true
                }
            })
        guard track(transfer) else { throw .shuttingDown }
        defer { untrack(transfer) }
        let outcome = await transfer.perform()

        func result(_ reason: FinishReason) -> Attempt {
            let end = ContinuousClock.now
            let d = stream.decoder
            // The upstream's prefix cache is one for every tenant of this server: its
            // cached_tokens would show one key what another's prompts were (#39), so it is passed
            // on only where there is one scope (no keys, no salt); otherwise 0, as if not cached.
            let shared = request.scope.isShared
            let usage =
                d.usage.map {
                    GenerationUsage(
                        promptTokens: $0.prompt, completionTokens: $0.completion, cachedTokens: shared ? $0.cached : 0)
                }
                ?? GenerationUsage(promptTokens: promptEstimate, completionTokens: d.deltas, cachedTokens: 0)
            let firstContent = stream.firstContent ?? end
            let promptMs = (firstContent - start).milliseconds
            let generationMs = (end - firstContent).milliseconds
            let timings = GenerationTimings(
                promptMilliseconds: promptMs, generationMilliseconds: generationMs,
                promptTokensPerSecond: promptMs > 0 ? Double(usage.promptTokens) * 1000 / promptMs : 0,
                generationTokensPerSecond: generationMs > 0 ? Double(usage.completionTokens) * 1000 / generationMs : 0)
            var generation = GenerationResult(
                content: d.content, finishReason: reason, usage: usage, timings: timings, tokens: [],
                stepsAfterCancel: 0)
            if let format = request.constraint as? UpstreamFormat {
                generation.constraintSatisfied = format.matches(d.answer)
            }
            return .result(generation)
        }

        switch outcome {
        case .finished(let response) where (200..<300).contains(response.status):
            if stream.decoder.finish() == .grew {
                onEvent(.snapshot(content: stream.decoder.content, completionTokens: stream.decoder.deltas))
            }
            if let failure = stream.decoder.failure { throw .upstreamFailed(failure) }
            guard let reason = stream.decoder.finishedAs ?? (stream.decoder.done ? .stop : nil) else {
                throw .upstreamFailed("the upstream closed the stream before it finished (no finish_reason, no [DONE])")
            }
            if reason != .length, let bad = Self.malformedCall(stream.decoder.calls) { throw .upstreamFailed(bad) }
            return result(reason)
        case .finished(let response):
            throw Self.error(for: response)
        case .stoppedByHandler:
            throw .upstreamFailed(stream.decoder.failure ?? "the stream was stopped")
        case .cancelled:
            return result(.cancelled)
        case .deadlinePassed:
            return result(.timeout)
        case .failed(.unreachable(let message)):
            return .unreachable(message)
        case .failed(let error):
            throw .upstreamFailed(error.description)
        }
    }

    /// Why a finished answer's calls cannot be passed on, or nil: each call's arguments must be a
    /// JSON object (the markup they are written into would not read as a call otherwise, and its
    /// text would pass as content).
    static func malformedCall(_ calls: [(index: Int, id: String, name: String, arguments: String)]) -> String? {
        for call in calls where !call.arguments.isEmpty {
            let value = try? JSONSerialization.jsonObject(with: Data(call.arguments.utf8), options: [.fragmentsAllowed])
            if !(value is [String: Any]) {
                return
                    "the upstream's call to '\(call.name)' has arguments that are not a JSON object: \(call.arguments.prefix(200))"
            }
        }
        return nil
    }

    /// A non-2xx answer: 429/503 is the upstream being full (try later), another 4xx refuses this
    /// request, anything else is a failure.
    static func error(for response: HTTPResponseSummary) -> GenerationError {
        let message = upstreamMessage(response.errorBody)
        switch response.status {
        case 429, 503:
            return .upstreamUnavailable(
                "it answered \(response.status): \(message)", retryAfterSeconds: response.retryAfterSeconds ?? 1)
        case 400..<500:
            return .upstreamRejected(
                rejection(for: response.status), message: "it answered \(response.status): \(message)")
        default:
            return .upstreamFailed("it answered \(response.status): \(message)")
        }
    }

    /// What a 4xx status means for the caller; the status itself stays in the message.
    static func rejection(for status: Int) -> UpstreamRejection {
        switch status {
        case 401, 403, 407: .credentials
        case 404: .notFound
        case 413: .tooLarge
        case 422: .unprocessable
        default: .invalidRequest
        }
    }

    /// The `error.message` of an OpenAI-style error body, else the body's start.
    static func upstreamMessage(_ body: String) -> String {
        if let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] {
            if let e = object["error"] as? [String: Any], let m = e["message"] as? String { return m }
            if let m = object["error"] as? String { return m }
            if let m = object["message"] as? String { return m }
        }
        let trimmed = body.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? "(no message)" : String(trimmed.prefix(500))
    }

    /// One message in OpenAI's chat shape: an assistant's calls as `tool_calls` (`id`, `type:
    /// function`, `function: {name, arguments}` with the arguments as a JSON string), a tool's
    /// result with its `tool_call_id`.
    static func message(_ m: ChatMessage) -> [String: Any] {
        var out: [String: Any] = ["role": m.role.rawValue, "content": m.content]
        if let calls = m.toolCalls, !calls.isEmpty {
            out["tool_calls"] = calls.map {
                ["id": $0.id, "type": "function", "function": ["name": $0.name, "arguments": $0.arguments]]
            }
            if m.content.isEmpty { out["content"] = NSNull() }
        }
        if let id = m.toolCallID { out["tool_call_id"] = id }
        return out
    }

    /// The request's tools (OpenAI's nested chat shape, each schema as written), `tool_choice`
    /// and `parallel_tool_calls`, when it has tools; `chat_template_kwargs` when given.
    static func tools(_ extras: TemplateExtras, into body: inout [String: Any]) {
        if let arguments = extras.arguments { body["chat_template_kwargs"] = UpstreamJSON.Raw(text: arguments) }
        guard !extras.tools.isEmpty else { return }
        body["tools"] = extras.tools.map { tool -> [String: Any] in
            var function: [String: Any] = ["name": tool.name]
            if let d = tool.description { function["description"] = d }
            if let p = tool.parameters { function["parameters"] = UpstreamJSON.Raw(text: p) }
            if tool.strict { function["strict"] = true }
            return ["type": "function", "function": function]
        }
        switch extras.choice {
        case .auto: body["tool_choice"] = "auto"
        case .none: body["tool_choice"] = "none"
        case .required: body["tool_choice"] = "required"
        case .function(let name): body["tool_choice"] = ["type": "function", "function": ["name": name]]
        }
        body["parallel_tool_calls"] = extras.parallel
    }

    /// The path under the base URL and the JSON body: a conversation is a chat completion
    /// (instructions become the system message), a text or token prompt a text completion.
    static func requestBody(_ r: BackendRequest, model: String) throws(GenerationError) -> (String, Data) {
        var body: [String: Any] = [
            "model": model, "stream": true, "stream_options": ["include_usage": true], "max_tokens": r.maxTokens,
        ]
        let s = r.sampling
        body["temperature"] = Double(s.temperature)
        if s.temperature > 0 {
            // top_k and min_p are extensions vLLM, llama.cpp's server and inferd accept.
            if s.topP < 1 { body["top_p"] = Double(s.topP) }
            if s.topK > 0 { body["top_k"] = s.topK }
            if s.minP > 0 { body["min_p"] = Double(s.minP) }
        }
        // OpenAI's own penalties, defined the same everywhere (this answer's tokens only); sent
        // at any temperature, since they change greedy answers too.
        if s.presencePenalty != 0 { body["presence_penalty"] = Double(s.presencePenalty) }
        if s.frequencyPenalty != 0 { body["frequency_penalty"] = Double(s.frequencyPenalty) }
        if s.repeatPenalty != 1 {
            throw .invalidOption(
                name: "repeat_penalty",
                reason: "cannot be sent to a remote engine (OpenAI-compatible servers name and define it differently)")
        }
        if r.sequence != nil {
            throw .invalidOption(name: "sequence", reason: "a remote engine keeps no KV cache")
        }
        if let seed = s.seed { body["seed"] = seed }
        if !r.stop.isEmpty { body["stop"] = r.stop }
        if r.ignoreEndOfGeneration { body["ignore_eos"] = true }
        if let constraint = r.constraint {
            guard let f = constraint as? UpstreamFormat else {
                throw .invalidOption(name: "constraint", reason: "is not one a remote engine can be sent")
            }
            f.apply(to: &body)
        }
        let path: String
        switch r.prompt.input {
        case .conversation(let instructions, let messages, let extras):
            let system: [[String: Any]] = instructions.map { [["role": "system", "content": $0]] } ?? []
            body["messages"] = system + messages.map(message)
            tools(extras, into: &body)
            path = "/chat/completions"
        case .text(let text):
            body["prompt"] = text
            path = "/completions"
        case .tokens(let ids):
            body["prompt"] = ids.map { Int($0) }
            path = "/completions"
        }
        do {
            return (path, try UpstreamJSON.encode(body))
        } catch {
            throw .computeFailed("the upstream request could not be encoded: \(error)")
        }
    }
}
