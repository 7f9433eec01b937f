import Engine
import Foundation

/// The local backend: the engine in this process, its chat template and single-flight.
extension InferenceEngine: GenerationBackend {
    /// The file's name without its extension, besides the model's own name.
    public var modelAliases: Set<String> {
        [modelName, URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent]
    }

    public var vocabularySize: Int { tokenizer.vocabularySize }

    public func makeConstraint(grammar: CompiledGrammar, identity: String) -> (any GenerationConstraint)? {
        constraint(compiled: grammar, identity: identity)
    }

    public func promptTokens(for input: PromptInput) throws(ChatTemplateError) -> [Int32] {
        switch input {
        case .conversation(let instructions, let messages):
            let system = instructions.map { [ChatMessage(role: .system, content: $0)] } ?? []
            return try promptTokens(for: system + messages)
        case .text(let text):
            return rawPromptTokens(text)
        case .tokens(let ids):
            return ids
        }
    }

    public func checkCapacity() throws(GenerationError) {
        try runner.checkCapacity()
    }

    public func submit(
        _ request: GenerationRequest, sharing: Bool, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration {
        if sharing && isShareable(request) {
            // Only capacity is checked now: whether it joins or starts one is decided when awaited.
            try runner.checkCapacity()
            return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
                try await self.generate(request, sharing: true, onEvent: onEvent)
            }
        }
        let ticket = try submit(request, onEvent: onEvent)
        return PendingGeneration { () async throws(GenerationError) -> GenerationResult in
            try await ticket.result()
        }
    }

    public var kvCache: (any KVCacheCapability)? { LocalKVCache(model: model) }
}

/// The engine's KV caches: f16 keys and values for every layer.
struct LocalKVCache: KVCacheCapability {
    let model: LlamaModel

    var kvBytesPerToken: Int { 2 * model.config.blockCount * model.config.kvDim * 2 }

    func makeSequence(capacity: Int) -> any PredictorSequence {
        model.makeSequence(capacity: capacity)
    }
}
