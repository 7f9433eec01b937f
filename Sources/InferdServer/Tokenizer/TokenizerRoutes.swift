import Backend
import Engine
import HTTPServer

/// The tokenizer endpoints in vLLM's shapes, which evaluation harnesses probe to tokenize without
/// a model hub (lm-evaluation-harness's remote tokenizer): `POST /tokenize`, `POST /detokenize`,
/// `GET /tokenizer_info`, also under `/v1/`. Errors in OpenAI's shape; unknown fields refused.
struct TokenizerRoutes: Sendable {
    let host: ModelHost

    func register(_ router: Router) {
        let openAI = OpenAIRoutes.openAI
        for prefix in ["", "/v1"] {
            router.post("\(prefix)/tokenize", openAI { request in try tokenize(request) })
            router.post("\(prefix)/detokenize", openAI { request in try detokenize(request) })
            router.get("\(prefix)/tokenizer_info", openAI { _ in try info() })
        }
    }

    /// The backend's tokenizer; a backend without one here (a remote engine) is 400.
    func tokenizer() throws -> (any GenerationBackend, any TokenizerAccess) {
        let backend = try host.requireBackend()
        guard let tokenizer = backend.tokenizerAccess else {
            throw OpenAIError.unsupported(
                "this server's backend has no tokenizer in this process (a remote engine's is its own)", param: nil)
        }
        return (backend, tokenizer)
    }

    /// `{"prompt"}` (with `add_special_tokens`, default true: as a raw prompt runs) or
    /// `{"messages"}` (rendered by the chat template with its generation prompt, as a chat
    /// request runs); answers `{"count", "max_model_len", "tokens", "token_strs"?}`.
    func tokenize(_ request: HTTPRequest) throws -> HTTPResponse {
        let (backend, tokenizer) = try tokenizer()
        let f = try OpenAIRoutes.fields(request)
        let allowed: Set<String> = [
            "model", "prompt", "messages", "add_special_tokens", "add_generation_prompt", "return_token_strs",
        ]
        if let unknown = f.values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: .unknownParameter)
        }
        if let model = try f.string("model") { try OpenAIRoutes.checkModel(model, backend) }
        let strings = try f.bool("return_token_strs") ?? false
        let tokens: [Int32]
        switch (f["prompt"], f["messages"]) {
        case (let prompt?, nil):
            guard case .string(let text) = prompt else { throw f.typeError("prompt", "a string", prompt) }
            if f["add_generation_prompt"] != nil {
                throw OpenAIError.invalid("add_generation_prompt applies to messages", param: "add_generation_prompt")
            }
            tokens = tokenizer.tokenize(text, addSpecialTokens: try f.bool("add_special_tokens") ?? true)
        case (nil, let raw?):
            guard case .array(let items) = raw, !items.isEmpty else {
                throw f.typeError("messages", "a non-empty array", raw)
            }
            var messages: [ChatMessage] = []
            for (i, item) in items.enumerated() {
                messages.append(try OpenAIChatRequest.message(item, path: "messages[\(i)]"))
            }
            // The template decides the special tokens of a conversation; it always ends with
            // the generation prompt, as a chat request is run.
            guard try f.bool("add_generation_prompt") ?? true else {
                throw OpenAIError.unsupported(
                    "add_generation_prompt: false is not supported (the template's prompt ends with it)",
                    param: "add_generation_prompt")
            }
            if try f.bool("add_special_tokens") == true {
                throw OpenAIError.unsupported(
                    "add_special_tokens with messages: the chat template places them", param: "add_special_tokens")
            }
            do {
                tokens = try backend.prepare(.conversation(instructions: nil, messages: messages)).tokens ?? []
            } catch {
                throw OpenAIError(HTTPError(error), param: "messages")
            }
        case (nil, nil):
            throw OpenAIError.invalid(
                "prompt or messages is required", param: "prompt", code: .missingRequiredParameter)
        case (_?, _?):
            throw OpenAIError.invalid("give prompt or messages, not both", param: "messages")
        }
        return .json(
            TokenizeBody(
                count: tokens.count, maxModelLen: backend.contextLength, tokens: tokens,
                tokenStrs: strings ? tokens.map { tokenizer.tokenString($0) ?? "" } : nil))
    }

    /// `{"tokens": [ids]}` → `{"prompt": text}`.
    func detokenize(_ request: HTTPRequest) throws -> HTTPResponse {
        let (backend, tokenizer) = try tokenizer()
        let f = try OpenAIRoutes.fields(request)
        if let unknown = f.values.keys.sorted().first(where: { !["model", "tokens"].contains($0) }) {
            throw OpenAIError.invalid("Unknown parameter: '\(unknown)'.", param: unknown, code: .unknownParameter)
        }
        if let model = try f.string("model") { try OpenAIRoutes.checkModel(model, backend) }
        guard let raw = f["tokens"] else {
            throw OpenAIError.invalid("tokens is required", param: "tokens", code: .missingRequiredParameter)
        }
        guard case .array(let items) = raw else { throw f.typeError("tokens", "an array of token ids", raw) }
        var ids: [Int32] = []
        for (i, item) in items.enumerated() {
            guard case .int(let n) = item, let id = Int32(exactly: n), id >= 0, Int(id) < backend.vocabularySize else {
                throw OpenAIError.invalid(
                    "tokens[\(i)] must be a token id from 0 to \(backend.vocabularySize - 1)", param: "tokens[\(i)]")
            }
            ids.append(id)
        }
        guard let text = tokenizer.detokenize(ids) else {
            throw OpenAIError.invalid("tokens: an id is outside the vocabulary", param: "tokens")
        }
        return .json(DetokenizeBody(prompt: text))
    }

    /// The special tokens, the chat template and the context length.
    func info() throws -> HTTPResponse {
        let (backend, tokenizer) = try tokenizer()
        return .json(
            TokenizerInfoBody(
                bosToken: tokenizer.bosToken, eosToken: tokenizer.eosToken, padToken: tokenizer.padToken,
                chatTemplate: backend.chatTemplateSource, modelMaxLength: backend.contextLength))
    }
}

struct TokenizeBody: Encodable, Sendable {
    var count: Int
    var maxModelLen: Int
    var tokens: [Int32]
    var tokenStrs: [String]?

    enum CodingKeys: String, CodingKey {
        case count, tokens
        case maxModelLen = "max_model_len"
        case tokenStrs = "token_strs"
    }
}

struct DetokenizeBody: Encodable, Sendable {
    var prompt: String
}

/// `GET /tokenizer_info`: what a client needs to tokenize alike (null where the model has none).
struct TokenizerInfoBody: Encodable, Sendable {
    var bosToken: String?
    var eosToken: String?
    var padToken: String?
    var chatTemplate: String?
    var modelMaxLength: Int

    enum CodingKeys: String, CodingKey {
        case bosToken = "bos_token"
        case eosToken = "eos_token"
        case padToken = "pad_token"
        case chatTemplate = "chat_template"
        case modelMaxLength = "model_max_length"
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bosToken, forKey: .bosToken)
        try c.encode(eosToken, forKey: .eosToken)
        try c.encode(padToken, forKey: .padToken)
        try c.encode(chatTemplate, forKey: .chatTemplate)
        try c.encode(modelMaxLength, forKey: .modelMaxLength)
    }
}
