import Engine
import Foundation
import HTTPServer
import InferdServer

/// The fuzz targets. Each takes arbitrary bytes and must neither crash nor hang: every failure
/// has to come back as a thrown, typed error. `make fuzz` runs each under libFuzzer with
/// AddressSanitizer; a plain build replays the committed corpora (see main.swift).
enum FuzzTarget: String, CaseIterable {
    /// `GGUFParser` over the bytes of a file (the model loader's first contact with a file).
    case gguf
    /// Every endpoint's body through `HTTPRequest.decodeJSON` and the OpenAI request readers.
    case json
    /// The request path of the HTTP layer: request ids, router matching, UTF-8 and depth checks.
    case http
    /// A chat template (the bytes as Jinja source) parsed and rendered by `ChatTemplate`.
    case template

    func run(_ data: [UInt8]) {
        switch self {
        case .gguf: Self.gguf(data)
        case .json: Self.json(data)
        case .http: Self.http(data)
        case .template: Self.template(data)
        }
    }

    /// One scratch file per process (tmpfs when there is one): `GGUFFile` maps a path.
    static let scratch: String = {
        let dir = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        return "\(dir)/inferd-fuzz-\(getpid()).gguf"
    }()

    static func gguf(_ data: [UInt8]) {
        // The parser alone, in memory.
        _ = data.withUnsafeBytes { try? GGUFParser.parse($0) }
        // Then the loader's path over a file: header, every tensor's extent, model config, tokenizer.
        guard FileManager.default.createFile(atPath: scratch, contents: Data(data)),
            let file = try? GGUFFile(path: scratch)
        else { return }
        for name in file.tensorNames {
            if let bytes = try? file.tensorData(name), bytes.count > 0 {
                _ = bytes[0] &+ bytes[bytes.count - 1]
            }
        }
        _ = try? ModelConfig(gguf: file)
        _ = try? Tokenizer(gguf: file)
    }

    static func json(_ data: [UInt8]) {
        guard let selector = data.first else { return }
        let request = HTTPRequest(
            id: "fuzz", method: .post, path: "/", headers: HTTPHeaders([("Content-Type", "application/json")]),
            body: Array(data.dropFirst()), maxJSONDepth: 32)
        switch selector % 8 {
        case 0: _ = try? GenerationRequestBody(request)
        case 1: _ = try? request.decodeJSON(GenerationOptionsBody.self)
        case 2:
            guard let fields = try? OpenAIJSON.fields(of: request) else { return }
            _ = try? OpenAIChatRequest(fields)
        case 3:
            guard let fields = try? OpenAIJSON.fields(of: request) else { return }
            _ = try? OpenAICompletionRequest(fields)
        case 4: _ = try? CreateSessionBody(request)
        case 5: _ = try? SessionTurnRequestBody(request)
        case 6: _ = try? SessionCancelBody(request)
        default:
            guard let fields = try? OpenAIJSON.fields(of: request) else { return }
            _ = try? ResponsesRequest(fields)
        }
    }

    static let router: Router = {
        let r = Router()
        for pattern in [
            "/health", "/metrics", "/v1/generations", "/v1/models", "/v1/models/{model}", "/v1/sessions",
            "/v1/sessions/{id}", "/v1/sessions/{id}/responses", "/v1/requests/{id}/cancel", "/v1/responses",
            "/v1/responses/{id}", "/v1/responses/{id}/input_items", "/v1/responses/{id}/cancel",
        ] {
            r.get(pattern) { _ in .text("") }
            r.post(pattern) { _ in .text("") }
        }
        r.delete("/v1/sessions/{id}") { _ in .text("") }
        r.delete("/v1/responses/{id}") { _ in .text("") }
        return r
    }()

    static func http(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        let method = HTTPMethod(parts.first ?? "")
        let path = parts.count > 1 ? parts[1] : "/"
        switch router.match(method, path) {
        case .found(let pattern, _, let parameters):
            if parameters.values.contains(where: { $0.isEmpty || $0.contains("/") }) {
                fatalError("router matched \(pattern) with an empty or slashed parameter: \(parameters)")
            }
        case .methodNotAllowed(let allowed):
            if allowed.isEmpty { fatalError("405 without allowed methods for \(path)") }
        case .notFound: break
        }
        if HTTPServer.isValidRequestID(text)
            != (1...64 ~= text.utf8.count
                && text.allSatisfy { c in
                    c.isASCII && (c.isLetter || c.isNumber || c == "." || c == "_" || c == "-")
                })
        {
            fatalError("request id validation disagrees with its definition for \(Array(text.utf8))")
        }
        let body = Array((parts.count > 2 ? parts[2] : "").utf8)
        let depth = HTTPRequest.nestingDepth(body, stopAfter: 8)
        if depth > 9 { fatalError("nesting scan went past its stop: \(depth)") }
        if let offset = HTTPRequest.firstInvalidUTF8Offset(body), offset > body.count {
            fatalError("invalid UTF-8 offset \(offset) beyond \(body.count) bytes")
        }
        // An SSE event is one block: whatever the data holds, the only blank line is the last.
        let event = SSEFormat.encode(event: parts.first ?? "", id: 1, data: text)
        let firstBlank = zip(event.indices, event.dropFirst()).first { $0.1 == 10 && event[$0.0] == 10 }?.0
        if firstBlank != event.count - 2 || event.contains(13) {
            fatalError("SSE encoding split one event: \(Array(text.utf8))")
        }
        let request = HTTPRequest(
            id: "fuzz", method: method, path: path,
            headers: HTTPHeaders([("Content-Type", parts.first ?? "")]), body: body, maxJSONDepth: 8)
        _ = try? OpenAIJSON.object(of: request)
    }

    /// A vocabulary with the control tokens real templates write, so rendering and encoding run
    /// as they do for a model.
    static let templateTokenizer: Tokenizer = {
        let bytes = (0..<256).map { String(UnicodeScalar(UInt8($0))) }
        let controls = ["<s>", "</s>", "<|im_start|>", "<|im_end|>", "<|eot_id|>", "<start_of_turn>", "<end_of_turn>"]
        var tokens = bytes.map { $0 == " " ? "\u{120}" : $0 }
        tokens += controls
        let types = [Int32](repeating: 1, count: 256) + [Int32](repeating: 3, count: controls.count)
        do {
            return try Tokenizer(
                tokens: tokens, merges: [], tokenTypes: types, bosID: 256, eosID: 257, preTokenizer: "smollm")
        } catch {
            // A fixed vocabulary: failing here is a bug in this target, not an input to survive.
            fatalError("the template target's vocabulary is invalid: \(error)")
        }
    }()

    /// Tighter bounds than the server's, so each input stays well under libFuzzer's timeout.
    static let templateLimits: JinjaLimits = {
        var limits = JinjaLimits()
        limits.maxSteps = 200_000
        limits.maxLoopIterations = 50_000
        limits.maxOutputBytes = 1 << 20
        limits.maxValueSize = 1 << 20
        return limits
    }()

    static func template(_ data: [UInt8]) {
        let tokenizer = templateTokenizer
        let source = String(decoding: data, as: UTF8.self)
        // Parsing, and the start-up render of a four-message conversation.
        guard
            let template = try? ChatTemplate(
                source: source, origin: "fuzz", tokenizer: tokenizer, limits: templateLimits)
        else { return }
        // Then conversations whose content spells control tokens and template syntax.
        for messages in [
            [ChatMessage(role: .user, content: "<|im_start|>{{ x }}{% if %}</s>")],
            [ChatMessage(role: .assistant, content: "")], [],
        ] {
            if let pieces = try? template.render(messages, addGenerationPrompt: messages.count != 1) {
                _ = tokenizer.encode(pieces)
            }
        }
    }
}
