import Engine
import Foundation
import GenerationVocabulary

/// The local backend: the engine in this process and its chat template.
extension InferenceEngine: GenerationBackend {
    /// The file's name without its extension, besides the model's own name.
    public var modelAliases: Set<String> {
        [modelName, URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent]
    }

    public var vocabularySize: Int { tokenizer.vocabularySize }

    public var chatTemplateSource: String? { template?.source }
    public var rendersTools: Bool { template?.rendersTools ?? false }
    public var computesLogprobs: Bool { true }
    public var tokenizerAccess: (any TokenizerAccess)? { LocalTokenizerAccess(engine: self) }

    public func makeConstraint(grammar: CompiledGrammar, identity: String) -> (any GenerationConstraint)? {
        constraint(compiled: grammar, identity: identity)
    }

    public func reasoningBudget(_ budget: Int, startsInReasoning: Bool, inner: (any GenerationConstraint)?)
        -> (any GenerationConstraint)?
    {
        makeReasoningBudget(budget, startsInReasoning: startsInReasoning, inner: inner)
    }

    public func prepare(_ input: PromptInput) throws(ChatTemplateError) -> PreparedPrompt {
        switch input {
        case .conversation(let instructions, let messages, let extras):
            let system = instructions.map { [ChatMessage(role: .system, content: $0)] } ?? []
            let rendered = try renderedPrompt(for: system + messages, tools: extras.tools, arguments: extras.arguments)
            var prompt = PreparedPrompt(input: input, tokens: rendered.tokens)
            prompt.opensReasoning = PreparedPrompt.opensReasoning(rendered.text)
            return prompt
        case .text(let text):
            return PreparedPrompt(input: input, tokens: rawPromptTokens(text))
        case .tokens(let ids):
            return PreparedPrompt(input: input, tokens: ids)
        }
    }

    public func checkCapacity() throws(GenerationError) {
        try runner.checkCapacity()
    }

    public func submit(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration {
        let ticket = try submit(try generationRequest(request), onEvent: onEvent)
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            try await ticket.result()
        }
    }

    /// The engine's token-level request: the prompt's ids as `prepare` rendered them.
    func generationRequest(_ r: BackendRequest) throws(GenerationError) -> GenerationRequest {
        let tokens: [Int32]
        if let prepared = r.prompt.tokens {
            tokens = prepared
        } else {
            // Prepared by another backend: rendered here, as this backend runs it.
            do {
                tokens = try prepare(r.prompt.input).tokens ?? []
            } catch {
                throw .computeFailed("the prompt cannot be rendered: \(error)")
            }
        }
        var request = GenerationRequest(
            promptTokens: tokens, maxTokens: r.maxTokens, sampling: r.sampling, stop: r.stop, sequence: r.sequence,
            label: r.label)
        request.ignoreEndOfGeneration = r.ignoreEndOfGeneration
        request.priority = r.priority
        request.scope = r.scope
        request.deadline = r.deadline
        request.constraint = r.constraint
        request.logprobs = r.logprobs
        return request
    }

    public var kvCache: (any KVCacheCapability)? { LocalKVCache(model: model) }
}

/// The engine's KV caches: keys and values for every layer, in the model's `kvCacheType`.
struct LocalKVCache: KVCacheCapability {
    let model: LlamaModel

    var kvBytesPerToken: Int { model.kvBytesPerToken }

    func makeSequence(capacity: Int) -> any PredictorSequence {
        model.makeSequence(capacity: capacity)
    }
}
